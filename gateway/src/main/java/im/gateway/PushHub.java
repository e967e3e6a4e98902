package im.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import im.delivery.route.RouteJson;
import im.infra.fault.FaultPoint;
import im.infra.fault.Faults;
import im.infra.kafka.TopicNames;
import im.infra.kafka.Topics;
import im.protocol.Event;
import im.protocol.EventPush;
import im.protocol.Hint;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway's side of delivery. On {@code sub} it publishes, per conversation, "device D of user
 * U is online here (gateway G, generation g)" to the interest topic and withdraws it when the
 * connection closes; it announces itself on the gateways topic so that delivery nodes expire its
 * routes if it dies. It consumes its own channel (events and hints routed to its devices) and the
 * notices topic (joins), and writes frames to the devices it still holds, after checking
 * visibility. Pushing is best effort: correctness comes from cursors, sync and hints.
 */
final class PushHub implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(PushHub.class);

    private final String bootstrap;
    private final TopicNames topics;
    private final String gatewayId;
    private final long gen;
    private final Duration heartbeat;
    private final Faults faults;
    private final Map<String, DeviceConnection> byDevice = new ConcurrentHashMap<>();
    private final Map<String, Set<DeviceConnection>> byUser = new ConcurrentHashMap<>();
    final AtomicLong pushed = new AtomicLong();
    final AtomicLong droppedByFault = new AtomicLong();
    final AtomicLong hintsDelivered = new AtomicLong();
    private KafkaProducer<String, String> producer;
    private KafkaConsumer<String, String> consumer;
    private ScheduledExecutorService timer;
    private Thread poller;
    private volatile boolean running;

    PushHub(String bootstrap, TopicNames topics, String gatewayId, long gen, Duration heartbeat, Faults faults) {
        this.bootstrap = bootstrap;
        this.topics = topics;
        this.gatewayId = gatewayId;
        this.gen = gen;
        this.heartbeat = heartbeat;
        this.faults = faults;
    }

    PushHub start(int partitions) {
        Topics.create(bootstrap, topics.conversationKeyed(), partitions);
        Topics.create(bootstrap, List.of(topics.channel(gatewayId)), 1);
        Topics.create(bootstrap, topics.singlePartition(), 1);
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        // Never hold a request thread for long when Kafka is unreachable: pushes are best effort.
        pp.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "2000");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        producer = new KafkaProducer<>(pp);
        publishHeartbeat();
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        cp.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "50");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        consumer = new KafkaConsumer<>(cp);
        List<TopicPartition> parts = List.of(new TopicPartition(topics.channel(gatewayId), 0),
                new TopicPartition(topics.notices(), 0));
        consumer.assign(parts);
        // A (re)started gateway holds no connections yet: what was routed before is of no use.
        consumer.seekToEnd(parts);
        parts.forEach(consumer::position);
        running = true;
        poller = new Thread(this::poll, "gw-push-" + gatewayId);
        poller.setDaemon(true);
        poller.start();
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "gw-heartbeat");
            t.setDaemon(true);
            return t;
        });
        timer.scheduleAtFixedRate(this::publishHeartbeat, heartbeat.toMillis(), heartbeat.toMillis(), TimeUnit.MILLISECONDS);
        return this;
    }

    private void publishHeartbeat() {
        producer.send(new ProducerRecord<>(topics.gateways(), gatewayId,
                RouteJson.heartbeat(gatewayId, gen, System.currentTimeMillis())));
    }

    /** After {@code sub}: route this device's conversations here. A newer connection of the device wins. */
    void subscribe(DeviceConnection conn, Map<String, Long> fromSeqByConv) {
        var p = conn.principal();
        DeviceConnection previous = byDevice.put(p.deviceId(), conn);
        if (previous != null && previous != conn) removeFromUser(previous);
        byUser.computeIfAbsent(p.userId(), u -> ConcurrentHashMap.newKeySet()).add(conn);
        fromSeqByConv.forEach((conv, from) -> {
            conn.subscribed.put(conv, from);
            publishInterest(conn, conv, true);
        });
    }

    /** On close: withdraw the device's interest (unless a newer connection of it took over). */
    void unsubscribe(DeviceConnection conn) {
        var p = conn.principal();
        if (p == null || conn.subscribed.isEmpty()) return;
        removeFromUser(conn);
        if (byDevice.remove(p.deviceId(), conn)) {
            for (String conv : conn.subscribed.keySet()) publishInterest(conn, conv, false);
        }
    }

    private void removeFromUser(DeviceConnection conn) {
        Set<DeviceConnection> s = byUser.get(conn.principal().userId());
        if (s != null) s.remove(conn);
    }

    private void publishInterest(DeviceConnection conn, String conv, boolean online) {
        var p = conn.principal();
        try {
            producer.send(new ProducerRecord<>(topics.interest(), conv,
                    RouteJson.interest(conv, p.deviceId(), p.userId(), gatewayId, gen, online)), (md, e) -> {
                        if (e != null) log.warn("interest for {} not published: {}", conv, e.toString());
                    });
        } catch (org.apache.kafka.common.KafkaException e) {
            // The device still gets hints and syncs; it just is not pushed to until the next sub.
            log.warn("interest for {} not published: {}", conv, e.toString());
        }
    }

    private void poll() {
        while (running) {
            try {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    try {
                        if (r.topic().equals(topics.notices())) onNotice(RouteJson.parse(r.value()));
                        else onChannel(RouteJson.parse(r.value()));
                    } catch (RuntimeException e) {
                        log.warn("ignoring a routed record that cannot be handled ({}): {}", e.toString(), r.value());
                    }
                }
            } catch (WakeupException e) {
                return;
            } catch (RuntimeException e) {
                log.warn("push consumer: {}", e.toString());
            }
        }
    }

    private void onChannel(JsonNode msg) {
        if (msg.has("hint")) {
            JsonNode h = msg.get("hint");
            for (JsonNode d : msg.get("devices")) {
                DeviceConnection c = byDevice.get(d.asText());
                if (c != null && c.subscribed.containsKey(h.get("conv").asText())
                        && c.push(new Hint(h.get("conv").asText(), h.get("head").asLong(), h.get("why").asText()))) {
                    hintsDelivered.incrementAndGet();
                }
            }
            return;
        }
        JsonNode ev = msg.get("ev");
        for (JsonNode d : msg.get("devices")) {
            DeviceConnection c = byDevice.get(d.asText());
            if (c != null) deliver(c, ev);
        }
    }

    private void onNotice(JsonNode msg) {
        if (!"join".equals(msg.path("kind").asText())) return;
        JsonNode ev = msg.get("ev");
        String conv = ev.get("conv").asText();
        Set<DeviceConnection> conns = byUser.get(msg.get("user").asText());
        if (conns == null) return;
        for (DeviceConnection c : conns) {
            if (c.subscribed.putIfAbsent(conv, ev.get("seq").asLong()) == null) publishInterest(c, conv, true);
            deliver(c, ev);
        }
    }

    /** Writes the event if the device may see it; a leave of its own user ends its subscription. */
    private void deliver(DeviceConnection c, JsonNode ev) {
        String conv = ev.get("conv").asText();
        long seq = ev.get("seq").asLong();
        Long from = c.subscribed.get(conv);
        if (from == null || seq < from) return;
        if (faults.shouldDrop(FaultPoint.GW_PUSH)) {
            droppedByFault.incrementAndGet();
        } else if (c.push(new EventPush(toWire(ev)))) {
            pushed.incrementAndGet();
        }
        if ("leave".equals(ev.path("kind").asText()) && ev.path("sender").asText().equals(c.principal().userId())) {
            if (c.subscribed.remove(conv) != null) publishInterest(c, conv, false);
        }
    }

    static Event toWire(JsonNode ev) {
        return new Event(ev.get("conv").asText(), ev.get("seq").asLong(), ev.get("kind").asText(), ev.get("mid").asText(),
                ev.get("sender").asText(), ev.path("cmid").isTextual() ? ev.get("cmid").asText() : null,
                ev.path("body").asText(""), ev.path("at").asLong());
    }

    @Override
    public void close() {
        running = false;
        if (timer != null) timer.shutdownNow();
        if (consumer != null) {
            consumer.wakeup();
            try {
                poller.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            consumer.close(Duration.ofSeconds(2));
        }
        if (producer != null) producer.close(Duration.ofSeconds(5));
    }
}
