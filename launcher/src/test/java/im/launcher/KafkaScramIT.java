package im.launcher;

import static im.launcher.OpsMetricsIT.im;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.core.read.ListAppender;
import im.delivery.route.DeliveryNode;
import im.embedded.EmbeddedKafkaBroker;
import im.gateway.Gateway;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.kafka.KafkaClientConfig;
import im.infra.kafka.SharedTopics;
import im.infra.kafka.TopicNames;
import im.infra.ops.Metrics;
import im.infra.role.Role;
import im.relay.CdcRelay;
import im.sweeper.Sweeper;
import im.testkit.Await;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * The platform on a Kafka broker that only SCRAM users may use (SASL_PLAINTEXT, SCRAM-SHA-256,
 * StandardAuthorizer refusing what no ACL allows), configured by nothing but IM_KAFKA_CONFIG_FILE:
 * every role (relay with its Debezium offset store, delivery node and sweeper on Kafka Streams,
 * gateway with its push hub and cursor sink) and {@code im events tail} work through it, while a
 * client without credentials, or with another user's, cannot write a gateway's routing topic; and
 * no log line holds the password.
 */
@ExtendWith(ImStackExtension.class)
class KafkaScramIT {
    private final List<AutoCloseable> started = new ArrayList<>();
    private final ExecutorService background = Executors.newCachedThreadPool();

    @TempDir
    Path dir;

    @AfterEach
    void stop() throws Exception {
        background.shutdownNow();
        for (int i = started.size() - 1; i >= 0; i--) started.get(i).close();
    }

    private static String secret() {
        byte[] b = new byte[16];
        new SecureRandom().nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    @Test
    void everyRoleWorksThroughScramAndNoOtherClientCanWriteTheRoutingTopics(TestStack stack) throws Exception {
        String password = secret();
        String intruderPassword = secret();
        ListAppender<ILoggingEvent> logs = captureLogs();
        EmbeddedKafkaBroker kafka = EmbeddedKafkaBroker.startWithScram(dir.resolve("kafka"),
                Map.of("im", password, "intruder", intruderPassword), "im");
        started.add(kafka);
        Path clientFile = dir.resolve("kafka-client.properties");
        Files.writeString(clientFile, EmbeddedKafkaBroker.scramClientProperties("im", password).entrySet().stream()
                .map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining("\n")));
        Settings s = CliIT.platformSettings(stack)
                .with(ConfigKeys.KAFKA_BOOTSTRAP, kafka.bootstrapServers())
                .with(ConfigKeys.KAFKA_CONFIG_FILE, clientFile.toString())
                .with(ConfigKeys.GATEWAY_ID, "gw-scram");
        TopicNames topics = TopicNames.from(s);

        // every role, as its command starts it, with nothing but the file to authenticate with
        SharedTopics.create(kafka.bootstrapServers(), s);
        List<Role.Running<?>> roles = new ArrayList<>();
        String gateway = null;
        String gatewayAdmin = null;
        for (Role<?> role : List.<Role<?>>of(CdcRelay.role(), DeliveryNode.role(), Sweeper.role(), Gateway.role())) {
            Role.Running<?> running = role.start(s, Metrics.newRegistry());
            started.add(running);
            roles.add(running);
            if (running.component() instanceof Gateway g) {
                gateway = "http://127.0.0.1:" + g.port();
                gatewayAdmin = "http://127.0.0.1:" + g.adminPort();
            }
        }
        Await.until(Duration.ofSeconds(90), () -> roles.stream().allMatch(Role.Running::isReady), "every role ready");

        // a message goes relay -> events -> delivery node -> the gateway's channel -> pushed to bo
        String[] tokens = OpsMetricsIT.anaAndBoInCab(gatewayAdmin);
        String ana = tokens[0];
        String bo = tokens[1];
        StringWriter tailOut = new StringWriter();
        String gw = gateway;
        Future<String> tail = background.submit(() -> im(tailOut, "tail", "--gateway", gw, "--token", bo, "--conv", "c-ab", "--from", "1", "-n", "2"));   // bo sees from his join (seq 2)
        Await.until(Duration.ofSeconds(30), () -> tailOut.toString().contains("join"), "bo's tail printed the joins");
        im("send", "--gateway", gateway, "--token", ana, "--conv", "c-ab", "over scram");
        tail.get(60, TimeUnit.SECONDS);
        assertTrue(tailOut.toString().contains("over scram"), tailOut.toString());

        // the events topic as `im events tail` reads it, with the file from the environment
        System.setProperty(ConfigKeys.KAFKA_CONFIG_FILE.name(), clientFile.toString());
        try {
            String events = im("events", "tail", "--bootstrap", kafka.bootstrapServers(), "--topic-prefix", topics.prefix(),
                    "--from-beginning", "--conv", "c-ab", "-n", "3");
            assertTrue(events.contains("over scram"), events);
        } finally {
            System.clearProperty(ConfigKeys.KAFKA_CONFIG_FILE.name());
        }

        // the defect: another client on the network writing a gateway's routing topic
        String channel = topics.channel("gw-scram");
        ExecutionException noAcl = assertThrows(ExecutionException.class,
                () -> send(KafkaClientConfig.plain(kafka.bootstrapServers()).clientProperties(EmbeddedKafkaBroker.scramClientProperties("intruder", intruderPassword)), channel));
        assertInstanceOf(TopicAuthorizationException.class, noAcl.getCause(), "an authenticated user without an ACL");
        Exception anonymous = assertThrows(Exception.class,
                () -> send(KafkaClientConfig.plain(kafka.bootstrapServers()).clientProperties(Map.of()), channel));
        assertTrue(anonymous instanceof ExecutionException || anonymous instanceof org.apache.kafka.common.errors.TimeoutException,
                "a client without credentials is never served: " + anonymous);

        for (ILoggingEvent e : logs.list) {
            String text = e.getFormattedMessage() + throwableText(e.getThrowableProxy());
            assertFalse(text.contains(password), "a log line holds the password: " + e.getLoggerName());
        }
    }

    /** Sends one record to {@code topic} with {@code props} and waits for the broker's answer. */
    private static void send(Map<String, Object> props, String topic) throws Exception {
        Map<String, Object> p = new java.util.HashMap<>(props);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "5000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "5000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "4000");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p,
                new org.apache.kafka.common.serialization.StringSerializer(), new org.apache.kafka.common.serialization.StringSerializer())) {
            producer.send(new ProducerRecord<>(topic, "d-x", "{\"forged\":true}")).get(20, TimeUnit.SECONDS);
        }
    }

    /** Every log event from here on, with Kafka's and Debezium's configuration dumps (INFO) included. */
    private ListAppender<ILoggingEvent> captureLogs() {
        ListAppender<ILoggingEvent> appender = new ListAppender<>();
        appender.start();
        Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        root.addAppender(appender);
        for (String name : List.of("org.apache.kafka", "io.debezium", "im")) {
            Logger l = (Logger) LoggerFactory.getLogger(name);
            Level before = l.getLevel();
            l.setLevel(Level.INFO);
            started.add(() -> l.setLevel(before));
        }
        started.add(0, () -> root.detachAppender(appender));
        return appender;
    }

    private static String throwableText(IThrowableProxy t) {
        return t == null ? "" : " " + t.getMessage() + throwableText(t.getCause());
    }
}
