package im.protocol;

import java.util.List;
import java.util.Objects;

/** {@code receipts} reply: one {@link Receipt} per asked seq, in the order asked. */
public record ReceiptsReply(String rid, String conv, List<Receipt> receipts) implements ServerFrame {
    public ReceiptsReply {
        Objects.requireNonNull(rid, "rid");
        Objects.requireNonNull(conv, "conv");
        receipts = List.copyOf(receipts);
    }
}
