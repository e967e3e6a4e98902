package im.protocol;

import java.util.List;
import java.util.Objects;

/**
 * {@code receipts}: how far the user's own messages at {@code seqs} of {@code conv} have got
 * (1 to {@link Limits#RECEIPTS_MAX_SEQS} seqs). Answered with {@link ReceiptsReply}.
 */
public record Receipts(String rid, String conv, List<Long> seqs) implements ClientFrame {
    public Receipts {
        Objects.requireNonNull(rid, "rid");
        Objects.requireNonNull(conv, "conv");
        seqs = List.copyOf(seqs);
    }
}
