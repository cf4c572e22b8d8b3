/*
 * A real push consumer for the rmq-console sandbox, built on the official rocketmq-client.
 *
 * It gives the sandbox groups that behave like production ones: a slow consumer whose lag stays
 * above zero and moves, one that fails messages so its %RETRY% topic fills (and, with a small
 * --max-reconsume, its %DLQ% topic too), a broadcasting one whose offsets live on local disk, and
 * an orderly one stuck on a poison message.
 *
 * --orderly consumes with a MessageListenerOrderly: one message at a time per queue, in order.
 * --poison-key KEY fails every delivery of a message whose keys include KEY, every time: an
 * orderly consumer answers SUSPEND_CURRENT_QUEUE_A_MOMENT and, retrying forever (the client's
 * default for orderly), never commits past it, so that queue's committed offset stays at the
 * poison message while the other queues keep moving; a concurrent consumer answers
 * RECONSUME_LATER, so the message goes round through %RETRY% (and to %DLQ% after
 * --max-reconsume) while the queue moves on.
 * --pull-batch and --pull-threshold set pullBatchSize and pullThresholdForQueue (defaults 4 and
 * 12, see below; the Java client's own defaults are 32 and 1000).
 * --pop consumes in POP mode, as the broker assigns it (the group must have been set to POP on
 * the brokers with `mqadmin setConsumeMode ... -m POP`): the broker hands out messages, the
 * client acks each, and the broker's committed offset moves when they are popped.
 * --hold never returns from the listener: what the client was handed stays unacknowledged (for
 * a POP group, popped and not acked: its running info says so as waitAckCount). With --pop, the
 * broker is asked to keep those messages invisible for 5 minutes (the client's longest) rather
 * than one, before it revives them through the group's POP retry topic.
 *
 * Contract with the Python side (console/sandbox/consumers.py):
 *   - prints the line READY on stdout once the consumer has started;
 *   - prints "DELIVERED <topic> <broker> <queue id> <queue offset>" for every message handed to
 *     it (before it is acknowledged), so a reset shows in the log as the offsets re-delivered;
 *   - prints "FAILED <topic> <broker> <queue id> <queue offset>" after a DELIVERED line when it
 *     failed that delivery on purpose (a poison message, or --fail-every);
 *   - shuts down cleanly (offsets persisted, client unregistered) when stdin reaches EOF, which
 *     happens when its parent closes the pipe or dies, and on SIGTERM.
 */

import java.io.IOException;
import java.io.InputStream;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.protocol.heartbeat.MessageModel;

public final class SandboxConsumer {

    private SandboxConsumer() {
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = parse(argv);
        String namesrv = required(args, "namesrv");
        String group = required(args, "group");
        String topics = required(args, "topic");
        MessageModel model = MessageModel.valueOf(args.getOrDefault("model", "CLUSTERING"));
        long sleepMs = Long.parseLong(args.getOrDefault("sleep-ms", "0"));
        long failEvery = Long.parseLong(args.getOrDefault("fail-every", "0"));
        int maxReconsume = Integer.parseInt(args.getOrDefault("max-reconsume", "-1"));
        int threads = Integer.parseInt(args.getOrDefault("threads", "1"));
        boolean orderly = Boolean.parseBoolean(args.getOrDefault("orderly", "false"));
        String poisonKey = args.get("poison-key");
        int pullBatch = Integer.parseInt(args.getOrDefault("pull-batch", "4"));
        int pullThreshold = Integer.parseInt(args.getOrDefault("pull-threshold", "12"));
        boolean pop = Boolean.parseBoolean(args.getOrDefault("pop", "false"));
        boolean hold = Boolean.parseBoolean(args.getOrDefault("hold", "false"));
        if (orderly && failEvery > 0) {
            // A failed orderly delivery is retried forever: every Nth would stop every queue.
            throw new IllegalArgumentException("--fail-every is for concurrent consumers only");
        }

        // Must be set before the client instance is created: LocalFileOffsetStore reads it once.
        String offsetDir = args.get("offset-dir");
        if (offsetDir != null) {
            System.setProperty("rocketmq.client.localOffsetStoreDir", offsetDir);
        }

        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setMessageModel(model);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        // One thread makes --sleep-ms an exact rate limit, so lag moves predictably.
        consumer.setConsumeThreadMin(threads);
        consumer.setConsumeThreadMax(threads);
        // Commit every second instead of every five so the console sees offsets move quickly.
        consumer.setPersistConsumerOffsetInterval(1000);
        // Small pulls interleave the queues in the single consume thread, so every queue's
        // committed offset starts moving within seconds (with the default 32 one queue waits
        // for all the others' batches), and in-flight stays small, as for a real slow consumer.
        // A small buffer per queue also bounds how long a reset takes to show: what was pulled
        // before it is consumed first (8 queues x 100 messages at 125 ms would be 100 s).
        // A stuck orderly queue keeps pulling only until its cache holds more than
        // pullThresholdForQueue messages; past that it sends no pull at all, so it never hears
        // of a server-side reset (PULL_OFFSET_MOVED is the answer to a pull). The poisoned group
        // (scenario.py) passes the Java client's own defaults instead.
        consumer.setPullBatchSize(pullBatch);
        consumer.setPullThresholdForQueue(pullThreshold);
        // The heartbeat sent at start can be skipped when it races the client's own first
        // scheduled heartbeat (taken before any broker is known); the next one would then come
        // 30 s later, and brokers list the consumer as offline until it does. Every 2 s bounds
        // that, and a 5 s route poll finds a restarted broker quickly.
        consumer.setHeartbeatBrokerInterval(2000);
        consumer.setPollNameServerInterval(5000);
        // A JVM starting cold on a busy machine can take more than the default 3 s for its
        // first TLS handshake and route lookup; the client then gives up its start for good.
        consumer.setMqClientApiTimeout(15000);
        if (pop) {
            // The broker's assignment (QUERY_ASSIGNMENT) instead of the client's own rebalance:
            // that is where the group's POP mode is read.
            consumer.setClientRebalance(false);
            consumer.setPopInvisibleTime(hold ? 300_000L : 60_000L);
        }
        if (maxReconsume >= 0) {
            consumer.setMaxReconsumeTimes(maxReconsume);
        }
        String instance = args.get("instance");
        if (instance != null) {
            consumer.setInstanceName(instance);
        }
        for (String topic : topics.split(",")) {
            consumer.subscribe(topic.trim(), "*");
        }

        AtomicLong delivered = new AtomicLong();
        if (hold) {
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                print(msgs, "DELIVERED");
                // Blocks the consume thread until shutdown: nothing handed to it is ever acked.
                while (pause(60_000)) {
                    // held
                }
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            });
        } else if (orderly) {
            consumer.registerMessageListener((MessageListenerOrderly) (msgs, context) ->
                consumeOrderly(msgs, context, sleepMs, poisonKey));
        } else {
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) ->
                consume(msgs, context, delivered, sleepMs, failEvery, poisonKey));
        }

        // SIGTERM and System.exit both run this: offsets are persisted and the client unregisters.
        Runtime.getRuntime().addShutdownHook(new Thread(consumer::shutdown, "sandbox-shutdown"));

        try {
            consumer.start();
        } catch (Exception e) {
            // The client gives up for good when its first name-server request fails (a loaded
            // machine; a TLS handshake slower than the request's timeout), and its threads would
            // keep the JVM alive: exit, so that the sandbox starts it again.
            e.printStackTrace();
            System.exit(3);
        }
        System.out.println("READY");
        System.out.flush();

        waitForEof(System.in);
        System.exit(0);
    }

    private static ConsumeConcurrentlyStatus consume(List<MessageExt> msgs,
        ConsumeConcurrentlyContext context, AtomicLong delivered, long sleepMs, long failEvery,
        String poisonKey) {
        print(msgs, "DELIVERED");
        for (MessageExt m : msgs) {
            long n = delivered.incrementAndGet();
            if (!pause(sleepMs)) {
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            }
            if ((failEvery > 0 && n % failEvery == 0) || isPoison(m, poisonKey)) {
                print(List.of(m), "FAILED");
                // Delay level 1 (1 s) instead of the default ladder (10 s, 30 s, ...) so retries
                // and dead letters show up within a short seed.
                context.setDelayLevelWhenNextConsume(1);
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            }
        }
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
    }

    private static ConsumeOrderlyStatus consumeOrderly(List<MessageExt> msgs,
        ConsumeOrderlyContext context, long sleepMs, String poisonKey) {
        print(msgs, "DELIVERED");
        for (MessageExt m : msgs) {
            if (!pause(sleepMs)) {
                return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
            }
            if (isPoison(m, poisonKey)) {
                print(List.of(m), "FAILED");
                // The client's default pause (1 s) before the same message is delivered again.
                return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
            }
        }
        return ConsumeOrderlyStatus.SUCCESS;
    }

    private static boolean isPoison(MessageExt m, String poisonKey) {
        String keys = m.getKeys();
        if (poisonKey == null || keys == null) {
            return false;
        }
        // KEYS holds the producer's keys separated by spaces (MessageConst.KEY_SEPARATOR).
        for (String key : keys.split(" ")) {
            if (key.equals(poisonKey)) {
                return true;
            }
        }
        return false;
    }

    /** Sleeps `ms`; false when interrupted (the consumer is shutting down). */
    private static boolean pause(long ms) {
        if (ms <= 0) {
            return true;
        }
        try {
            Thread.sleep(ms);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static void print(List<MessageExt> msgs, String what) {
        StringBuilder lines = new StringBuilder();
        for (MessageExt m : msgs) {
            lines.append(what).append(' ').append(m.getTopic()).append(' ').append(m.getBrokerName())
                .append(' ').append(m.getQueueId()).append(' ').append(m.getQueueOffset()).append('\n');
        }
        synchronized (System.out) {
            System.out.print(lines);
            System.out.flush();
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

    /** "--name value" pairs; a "--name" followed by another "--name" (or nothing) is a flag:
     * "true". */
    private static Map<String, String> parse(String[] argv) {
        Map<String, String> out = new HashMap<>();
        for (int i = 0; i < argv.length; i++) {
            String key = argv[i];
            if (!key.startsWith("--")) {
                throw new IllegalArgumentException("expected --name value pairs, got: " + key);
            }
            boolean flag = i + 1 >= argv.length || argv[i + 1].startsWith("--");
            out.put(key.substring(2), flag ? "true" : argv[++i]);
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
