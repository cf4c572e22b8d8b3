/*
 * The official tools' answer to "which offset does this store time fall on", for the plan's
 * integration test (tests/integration/test_plan_timestamp.py): DefaultMQAdminExt.searchOffset,
 * the call mqadmin's resetOffsetByTime makes per queue, and it only reads.
 *
 * Usage: OffsetOracle <namesrv> <timestamp ms> (<topic> <broker> <queue id>)...
 * Prints one line per queue, "OFFSET <topic> <broker> <queue id> <offset>" (the client may log
 * other lines to stdout).
 */

import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public final class OffsetOracle {

    private OffsetOracle() {
    }

    public static void main(String[] argv) throws Exception {
        if (argv.length < 5 || (argv.length - 2) % 3 != 0) {
            System.err.println("usage: OffsetOracle <namesrv> <timestamp ms> (<topic> <broker> <queue id>)...");
            System.exit(2);
        }
        // 15 s, not the client's 3 s: on a loaded machine a route lookup can take longer, and
        // a timeout here is a failed comparison with nothing wrong in what is compared.
        DefaultMQAdminExt admin = new DefaultMQAdminExt(15000);
        admin.setMqClientApiTimeout(15000);
        admin.setNamesrvAddr(argv[0]);
        admin.setInstanceName("offset-oracle-" + ProcessHandle.current().pid());
        long timestamp = Long.parseLong(argv[1]);
        admin.start();
        try {
            for (int i = 2; i < argv.length; i += 3) {
                MessageQueue mq = new MessageQueue(argv[i], argv[i + 1], Integer.parseInt(argv[i + 2]));
                long offset = admin.searchOffset(mq, timestamp);
                System.out.println("OFFSET " + argv[i] + " " + argv[i + 1] + " " + argv[i + 2] + " " + offset);
            }
        } finally {
            admin.shutdown();
        }
    }
}
