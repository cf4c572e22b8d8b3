/*
 * RocketMQ 5.5's lite topics for the rmq-console sandbox, on the official gRPC client
 * (org.apache.rocketmq:rocketmq-client-java 5.1.0+, apache/rocketmq-clients): a producer that
 * sends to lite topics of a parent topic (message type LITE), and, with --group, a
 * LitePushConsumer of that group bound to the parent topic. Both talk to the proxy only.
 *
 * What it does is driven by its standard input, one command a line, each answered on stdout by
 * a line "OK <command>" once done, or "FAILED <command>: <why>":
 *   send LITE N         sends N messages to lite topic LITE (keys LITE-0 .. LITE-(N-1));
 *   subscribe LITE      the consumer subscribes to lite topic LITE;
 *   unsubscribe LITE    ... and stops consuming it: its offset stays where it is, and what is
 *                       sent to it afterwards is the group's lag there.
 * The consumer acknowledges every message handed to it (lite consumption is in order per lite
 * topic: the broker's committed offset moves as they are acked).
 *
 * Contract with the Python side (console/sandbox/consumers.py):
 *   - prints READY once the producer (and the consumer) started;
 *   - prints "CONSUMED <lite topic> <message id>" for every message it acknowledged;
 *   - shuts down when stdin reaches EOF (its parent closed the pipe or died) or on SIGTERM.
 */

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.LitePushConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;

public final class LiteClient {

    private LiteClient() {
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = parse(argv);
        String endpoint = required(args, "proxy");
        String topic = required(args, "topic");
        String group = args.get("group");
        boolean ssl = Boolean.parseBoolean(args.getOrDefault("ssl", "false"));

        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration configuration = ClientConfiguration.newBuilder()
            .setEndpoints(endpoint)
            .enableSsl(ssl)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
        Producer producer = provider.newProducerBuilder()
            .setClientConfiguration(configuration)
            .setTopics(topic)
            .build();
        LitePushConsumer consumer = null;
        if (group != null) {
            consumer = provider.newLitePushConsumerBuilder()
                .setClientConfiguration(configuration)
                .setConsumerGroup(group)
                .bindTopic(topic)
                .setMessageListener(m -> {
                    print("CONSUMED " + m.getLiteTopic().orElse("?") + " " + m.getMessageId());
                    return ConsumeResult.SUCCESS;
                })
                .build();
        }
        final LitePushConsumer closing = consumer;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                if (closing != null) {
                    closing.close();
                }
                producer.close();
            } catch (IOException e) {
                // shutting down anyway
            }
        }, "sandbox-shutdown"));
        print("READY");

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (!line.isEmpty()) {
                obey(line, provider, producer, consumer, topic);
            }
        }
        System.exit(0);
    }

    private static void obey(String line, ClientServiceProvider provider, Producer producer,
        LitePushConsumer consumer, String topic) {
        String[] words = line.split("\\s+");
        try {
            switch (words[0]) {
                case "send":
                    int count = Integer.parseInt(words[2]);
                    for (int i = 0; i < count; i++) {
                        Message message = provider.newMessageBuilder()
                            .setTopic(topic)
                            .setLiteTopic(words[1])
                            .setKeys(words[1] + "-" + i)
                            .setBody(("{\"lite\":\"" + words[1] + "\",\"seq\":" + i + "}")
                                .getBytes(StandardCharsets.UTF_8))
                            .build();
                        producer.send(message);
                    }
                    break;
                case "subscribe":
                    consumerOf(consumer).subscribeLite(words[1]);
                    break;
                case "unsubscribe":
                    consumerOf(consumer).unsubscribeLite(words[1]);
                    break;
                default:
                    throw new IllegalArgumentException("unknown command");
            }
            print("OK " + line);
        } catch (Exception e) {
            print("FAILED " + line + ": " + String.valueOf(e).replace('\n', ' '));
        }
    }

    private static LitePushConsumer consumerOf(LitePushConsumer consumer) {
        if (consumer == null) {
            throw new IllegalStateException("no consumer: started without --group");
        }
        return consumer;
    }

    private static void print(String line) {
        synchronized (System.out) {
            System.out.println(line);
            System.out.flush();
        }
    }

    /** "--name value" pairs. */
    private static Map<String, String> parse(String[] argv) {
        Map<String, String> out = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) {
            if (!argv[i].startsWith("--")) {
                throw new IllegalArgumentException("expected --name value pairs, got: " + argv[i]);
            }
            out.put(argv[i].substring(2), argv[i + 1]);
        }
        return out;
    }

    private static String required(Map<String, String> args, String name) {
        String value = args.get(name);
        if (value == null) {
            throw new IllegalArgumentException("missing --" + name);
        }
        return value;
    }
}
