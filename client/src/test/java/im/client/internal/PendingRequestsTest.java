package im.client.internal;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.api.ConnectionLostException;
import im.protocol.Acked;
import im.protocol.Hint;
import im.protocol.Limits;
import im.protocol.ServerFrame;
import im.protocol.Sub;
import im.protocol.Subbed;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class PendingRequestsTest {
    @Test
    void ridsAreUniquePerClientAndValidIds() {
        PendingRequests.Rids rids = new PendingRequests.Rids();
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < 1000; i++) {
            assertTrue(seen.add(rids.next()));
        }
        assertTrue(seen.stream().allMatch(Limits::isValidId));
    }

    @Test
    void aReplyCompletesOnlyTheRequestWithItsRidAndAPushMatchesNone() {
        PendingRequests p = new PendingRequests();
        CompletableFuture<ServerFrame> sub = new CompletableFuture<>();
        assertTrue(p.register(new Sub("r1"), false, sub));
        assertFalse(p.register(new Sub("r1"), false, new CompletableFuture<>()), "one pending request per rid");

        assertNull(p.take(new Hint("c-ab", 3, "sweep")), "a push answers nothing");
        assertNull(p.take(new Acked("r2", "c-ab", 1)), "nor a reply to an unknown rid");
        assertSame(sub, p.take(new Subbed("r1", List.of())).future());
        assertNull(p.take(new Subbed("r1", List.of())), "taken once");
    }

    @Test
    void failAllFailsEveryPendingRequest() {
        PendingRequests p = new PendingRequests();
        CompletableFuture<ServerFrame> a = new CompletableFuture<>();
        CompletableFuture<ServerFrame> b = new CompletableFuture<>();
        p.register(new Sub("r1"), false, a);
        p.register(new Sub("r2"), false, b);
        p.failAll(new ConnectionLostException("gone"));
        assertTrue(a.isCompletedExceptionally() && b.isCompletedExceptionally());
        assertNull(p.take(new Subbed("r1", List.of())));
    }
}
