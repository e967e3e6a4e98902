package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import im.protocol.ErrorCode;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Bad input over a real socket: each kind gets its documented error code, nothing is written,
 * and the connection survives everything except what must close it (bad token, stale install,
 * a frame too large to buffer, a text frame that is not UTF-8).
 */
@ExtendWith(ImStackExtension.class)
class BadInputIT {
    private Fixture fx;
    private InProcessGateway gw;

    @BeforeEach
    void setUp(TestStack stack) {
        fx = new Fixture(stack);
        gw = new InProcessGateway(stack);
    }

    @AfterEach
    void tearDown() {
        gw.close();
    }

    private static String send(String conv, String cmid, String body) {
        return "{\"t\":\"send\",\"rid\":\"r1\",\"conv\":\"" + conv + "\",\"cmid\":\"" + cmid + "\",\"body\":\"" + body + "\"}";
    }

    @Test
    void everyKindOfBadFrameGetsItsErrorAndWritesNothing() throws Exception {
        Map<String, String> cases = new LinkedHashMap<>();
        cases.put("not json", "BAD_JSON");
        cases.put("[1,2,3]", "BAD_JSON");
        cases.put("{\"t\":\"launch\",\"rid\":\"r1\"}", "UNKNOWN_TYPE");
        cases.put("{\"rid\":\"r1\",\"conv\":\"c-ab\"}", "UNKNOWN_TYPE");
        cases.put("{\"t\":\"send\",\"rid\":\"r1\",\"cmid\":\"m1\",\"body\":\"x\"}", "MISSING_FIELD");
        cases.put("{\"t\":\"send\",\"rid\":\"r1\",\"conv\":7,\"cmid\":\"m1\",\"body\":\"x\"}", "BAD_FIELD");
        cases.put("{\"t\":\"ack\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"seq\":\"7\"}", "BAD_FIELD");
        cases.put("{\"t\":\"ack\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"seq\":-1}", "BAD_FIELD");
        cases.put("{\"t\":\"ack\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"seq\":99999999999999999999}", "BAD_FIELD");
        cases.put("{\"t\":\"ack\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"seq\":2.5}", "BAD_FIELD");
        cases.put(send("c-ab", "m1", ""), "BAD_FIELD");
        cases.put(send("c ab", "m1", "x"), "BAD_FIELD");
        cases.put("{\"t\":\"send\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"cmid\":\"m1\",\"body\":\"x\",\"admin\":true}", "BAD_FIELD");
        cases.put(send("c-ab", "m1", "é".repeat(8193)), "BODY_TOO_LARGE");
        cases.put(send("c-ab", "m1", "x".repeat(70_000)), "FRAME_TOO_LARGE");
        cases.put(send("c-ab", "m1", "\\ud800"), "BAD_UTF8");
        cases.put(send("c-ab", "m1", "a\\u0000b"), "BAD_FIELD");
        cases.put(send("c-zz", "m1", "x"), "NOT_MEMBER");
        cases.put("{\"t\":\"auth\",\"rid\":\"r1\",\"token\":\"" + fx.anaToken + "\"}", "ALREADY_AUTHENTICATED");
        cases.put("{\"t\":\"ack\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"seq\":107}", "CURSOR_AHEAD");
        cases.put("{\"t\":\"sync\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"after\":0,\"limit\":0}", "BAD_FIELD");
        cases.put("{\"t\":\"send\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"cmid\":\"m1\",\"body\":\"x\",\"body\":\"y\"}", "BAD_JSON");
        cases.put("{\"t\":\"send\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"cmid\":\"m1\",\"body\":" + "[".repeat(100) + "]".repeat(100) + "}", "BAD_JSON");

        try (RawSocket s = new RawSocket(gw.ws())) {
            assertEquals("authed", s.auth(fx.anaToken).get("t").asText());
            int i = 0;
            for (Map.Entry<String, String> c : cases.entrySet()) {
                JsonNode reply = s.request(c.getKey());
                assertEquals("error", reply.get("t").asText(), "case " + i + ": " + abbreviate(c.getKey()));
                assertEquals(c.getValue(), reply.get("code").asText(), "case " + i + ": " + abbreviate(c.getKey()) + " -> " + reply);
                assertTrue(reply.get("msg").asText().length() > 0);
                i++;
            }
            s.sendBinary(new byte[] {1, 2, 3});
            assertEquals("BINARY_UNSUPPORTED", s.next().get("code").asText());
            assertEquals(0, fx.messages(), "no bad frame wrote anything");
            assertEquals(2, fx.head("c-ab"), "no seq was consumed");

            // The connection survived all of it.
            JsonNode ok = s.request(send("c-ab", "m-good", "finally"));
            assertEquals("sent", ok.get("t").asText(), ok.toString());
            assertEquals(3, ok.get("seq").asLong());
        }
        assertEquals(1, fx.messages());
    }

    @Test
    void nulBodyIsRefusedTerminallyEveryTimeAndWritesNoRow() throws Exception {
        // PostgreSQL text cannot hold U+0000; it used to fail the INSERT and be answered INTERNAL (retriable).
        try (RawSocket s = new RawSocket(gw.ws())) {
            s.auth(fx.anaToken);
            for (int attempt = 0; attempt < 2; attempt++) {
                JsonNode r = s.request(send("c-ab", "m-nul", "before\\u0000after"));
                assertEquals("error", r.get("t").asText(), r.toString());
                assertEquals("BAD_FIELD", r.get("code").asText(), r.toString());
                assertEquals("r1", r.get("rid").asText());
                assertTrue(r.get("msg").asText().contains("U+0000"), r.toString());
                assertFalse(ErrorCode.valueOf(r.get("code").asText()).retriable(), "the client drops it");
            }
            assertEquals(0, fx.messages(), "no row");
            assertEquals(2, fx.head("c-ab"), "no seq was consumed");
            // The cmid was never used: the same cmid with a storable body is a first send.
            JsonNode ok = s.request(send("c-ab", "m-nul", "before after"));
            assertEquals("sent", ok.get("t").asText(), ok.toString());
            assertFalse(ok.get("dup").asBoolean());
        }
        assertEquals(1, fx.messages());
    }

    @Test
    void errorRepliesCarryTheRequestRid() throws Exception {
        try (RawSocket s = new RawSocket(gw.ws())) {
            s.auth(fx.anaToken);
            JsonNode r = s.request("{\"t\":\"ack\",\"rid\":\"my-rid-9\",\"conv\":\"c-ab\",\"seq\":\"x\"}");
            assertEquals("my-rid-9", r.get("rid").asText());
        }
    }

    @Test
    void nonMemberAndCmidConflict() throws Exception {
        try (RawSocket cy = new RawSocket(gw.ws()); RawSocket ana = new RawSocket(gw.ws())) {
            cy.auth(fx.cyToken);
            assertEquals("NOT_MEMBER", cy.request(send("c-ab", "m1", "let me in")).get("code").asText());
            ana.auth(fx.anaToken);
            assertEquals("sent", ana.request(send("c-ab", "m1", "first")).get("t").asText());
            assertEquals("CMID_CONFLICT", ana.request(send("c-ab", "m1", "different")).get("code").asText());
        }
        assertEquals(1, fx.messages());
    }

    @Test
    void framesBeforeAuthAreRefusedButTheConnectionStays() throws Exception {
        try (RawSocket s = new RawSocket(gw.ws())) {
            assertEquals("NOT_AUTHENTICATED", s.request(send("c-ab", "m1", "x")).get("code").asText());
            assertEquals("NOT_AUTHENTICATED", s.request("{\"t\":\"sub\",\"rid\":\"r2\"}").get("code").asText());
            assertEquals("authed", s.auth(fx.anaToken).get("t").asText());
        }
        assertEquals(0, fx.messages());
    }

    @Test
    void badMissingAndStaleTokensCloseTheConnection() throws Exception {
        try (RawSocket s = new RawSocket(gw.ws())) {
            assertEquals("BAD_TOKEN", s.auth("imt_not-a-real-token").get("code").asText());
            assertEquals(4001, s.awaitClose());
        }
        try (RawSocket s = new RawSocket(gw.ws())) {
            assertEquals("MISSING_FIELD", s.request("{\"t\":\"auth\",\"rid\":\"a1\"}").get("code").asText());
            assertEquals("BAD_FIELD", s.request("{\"t\":\"auth\",\"rid\":\"a1\",\"token\":\"\"}").get("code").asText());
        }
        String old = fx.anaToken;
        fx.dir.reinstallDevice("d-ana");
        try (RawSocket s = new RawSocket(gw.ws())) {
            assertEquals("STALE_INSTALL", s.auth(old).get("code").asText());
            assertEquals(4003, s.awaitClose());
        }
    }

    @Test
    void staleInstallOnAnOpenConnectionCannotSendOrAckAndClosesIt() throws Exception {
        try (RawSocket s = new RawSocket(gw.ws()); RawSocket t = new RawSocket(gw.ws())) {
            s.auth(fx.anaToken);
            t.auth(fx.anaToken);
            fx.dir.reinstallDevice("d-ana");
            assertEquals("STALE_INSTALL", s.request(send("c-ab", "m1", "x")).get("code").asText());
            assertEquals(4003, s.awaitClose());
            assertEquals("STALE_INSTALL", t.request("{\"t\":\"ack\",\"rid\":\"r1\",\"conv\":\"c-ab\",\"seq\":1}").get("code").asText());
            assertEquals(4003, t.awaitClose());
        }
        assertEquals(0, fx.messages());
    }

    @Test
    void textFrameThatIsNotUtf8ClosesWith1007() throws Exception {
        try (WireSocket w = new WireSocket(gw.port())) {
            w.sendText("{\"t\":\"auth\",\"rid\":\"a1\",\"token\":\"" + fx.anaToken + "\"}");
            assertTrue(w.read().text().contains("authed"));
            byte[] bad = send("c-ab", "m1", "XX").getBytes(StandardCharsets.UTF_8);
            int at = new String(bad, StandardCharsets.UTF_8).indexOf("XX");
            bad[at] = (byte) 0xC3;       // a lead byte followed by a non-continuation byte
            bad[at + 1] = (byte) 0x28;
            w.sendText(bad);
            assertEquals(1007, w.readUntilClose());
        }
        assertEquals(0, fx.messages());
    }

    @Test
    void frameTooLargeToBufferClosesWith1009() throws Exception {
        try (WireSocket w = new WireSocket(gw.port())) {
            w.sendText("x".repeat((int) WebSocketEndpoint.HARD_FRAME_LIMIT + 10));
            assertEquals(1009, w.readUntilClose());
        }
    }

    @Test
    void otherClientsAreServedWhileOneMisbehaves() throws Exception {
        try (RawSocket bad = new RawSocket(gw.ws()); RawSocket good = new RawSocket(gw.ws())) {
            bad.auth(fx.anaToken);
            good.auth(fx.boToken);
            for (int i = 0; i < 200; i++) bad.send("garbage " + i);
            JsonNode r = good.request(send("c-ab", "b1", "hi"));
            assertEquals("sent", r.get("t").asText());
        }
    }

    private static String abbreviate(String s) {
        return s.length() > 120 ? s.substring(0, 120) + "..." : s;
    }
}
