"""The RocketMQ releases the suite proves besides the main sandbox's."""

#: The newest RocketMQ release whose jars Maven Central serves: 5.5.1's broker jar is there, but
#: not its namesrv, client, tools, srvutil, filter or auth jars (checked 2026-11-25, `mvn
#: dependency:copy-dependencies -Drocketmq.version=5.5.1` on console/sandbox/resources/pom.xml:
#: "Could not find artifact org.apache.rocketmq:rocketmq-namesrv:jar:5.5.1 in central").
NEWEST_RELEASE = "5.5.0"
