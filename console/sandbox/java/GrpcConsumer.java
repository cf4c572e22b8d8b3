/*
 * A gRPC consumer for the rmq-console sandbox, built on the official RocketMQ 5 client
 * (org.apache.rocketmq:rocketmq-client-java, apache/rocketmq-clients): a SimpleConsumer that
 * talks to the proxy, never to a broker. The proxy pops messages from the brokers for it (POP
 * consumption) and acks them when it acks.
 *
 * --hold N keeps the first N messages it receives without acking them (they stay invisible for
 * --invisible-s seconds, an hour by default, then the broker revives them through the group's
 * POP retry topic); everything after the first N is acked as it arrives. With N 0 it acks all.
 * --ssl true talks TLS to the proxy (the client trusts any server certificate; the proxy asks
 * no client certificate on its gRPC port).
 *
 * Contract with the Python side (console/sandbox/consumers.py):
 *   - prints the line READY on stdout once the consumer has started;
 *   - prints "RECEIVED <topic> <message id>" for every message received, and "ACKED <topic>
 *     <message id>" for every one acked;
 *   - shuts down cleanly when stdin reaches EOF (its parent closed the pipe or died) or on
 *     SIGTERM.
 */

import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;

public final class GrpcConsumer {

    private GrpcConsumer() {
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = parse(argv);
        String endpoint = required(args, "proxy");
        String group = required(args, "group");
        String topic = required(args, "topic");
        long hold = Long.parseLong(args.getOrDefault("hold", "0"));
        long invisibleS = Long.parseLong(args.getOrDefault("invisible-s", "3600"));
        boolean ssl = Boolean.parseBoolean(args.getOrDefault("ssl", "false"));

        ClientConfiguration configuration = ClientConfiguration.newBuilder()
            .setEndpoints(endpoint)
            .enableSsl(ssl)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
        SimpleConsumer consumer = ClientServiceProvider.loadService().newSimpleConsumerBuilder()
            .setClientConfiguration(configuration)
            .setConsumerGroup(group)
            .setSubscriptionExpressions(Map.of(topic, FilterExpression.SUB_ALL))
            // The proxy holds a receive open this long when there is nothing to hand out.
            .setAwaitDuration(Duration.ofSeconds(5))
            .build();

        AtomicBoolean stopping = new AtomicBoolean();
        Thread receiver = new Thread(() -> receive(consumer, hold, invisibleS, stopping),
            "sandbox-receive");
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping.set(true);
            try {
                consumer.close();
            } catch (IOException e) {
                // shutting down anyway
            }
        }, "sandbox-shutdown"));
        receiver.setDaemon(true);
        receiver.start();
        System.out.println("READY");
        System.out.flush();

        waitForEof(System.in);
        System.exit(0);
    }

    private static void receive(SimpleConsumer consumer, long hold, long invisibleS,
        AtomicBoolean stopping) {
        long held = 0;
        while (!stopping.get()) {
            List<MessageView> messages;
            try {
                messages = consumer.receive(16, Duration.ofSeconds(invisibleS));
            } catch (ClientException e) {
                // Nothing to receive (the proxy answers "no new message" as an error) or the
                // proxy is busy: ask again, as an application would.
                pause(500);
                continue;
            }
            for (MessageView m : messages) {
                print("RECEIVED", m);
                if (held < hold) {
                    held++;
                    continue;
                }
                try {
                    consumer.ack(m);
                    print("ACKED", m);
                } catch (ClientException e) {
                    // Not acked: the broker revives it after the invisible time, as it would
                    // for a real application.
                }
            }
        }
    }

    private static void print(String what, MessageView m) {
        synchronized (System.out) {
            System.out.println(what + " " + m.getTopic() + " " + m.getMessageId());
            System.out.flush();
        }
    }

    private static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void waitForEof(InputStream in) {
        byte[] buffer = new byte[256];
        try {
            while (in.read(buffer) >= 0) {
                // The parent never writes; anything read is ignored.
            }
        } catch (IOException e) {
            // A broken pipe means the parent is gone: same as EOF.
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
