package im.store.send;

import static org.junit.jupiter.api.Assertions.assertEquals;

import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The seq allocation has one rule (the next seq is the head plus one, and becomes the head) in two
 * forms: SQL for a transaction that allocates as it goes ({@link ConversationLog#NEXT_SEQ},
 * {@link ConversationLog#allocate}) and Java for the group-commit batch
 * ({@link ConversationLog.Heads}, whose heads {@link ConversationLog#MOVE_HEADS} writes). For each
 * case, three conversations start at the same head and allocate the same number of seqs, one in
 * each form: the seqs handed out and the heads left must be the same.
 */
@ExtendWith(ImStackExtension.class)
class ConversationLogIT {
    /** A head to start from, how many seqs to allocate, and a name for the failure message. */
    private record Case(String name, long head, int n) {}

    private static final List<Case> CASES = List.of(
            new Case("an empty conversation, one seq", 0, 1),
            new Case("an empty conversation, several seqs", 0, 3),
            new Case("a conversation with events, one seq", 7, 1),
            new Case("a conversation with events, several seqs", 7, 5));

    @Test
    void theJavaAndTheSqlAllocationHandOutTheSameSeqs(TestStack stack) throws Exception {
        try (Connection c = stack.dataSource().getConnection()) {
            for (int i = 0; i < CASES.size(); i++) {
                Case k = CASES.get(i);
                String sql = "c-l" + i + "-sql";
                String bulk = "c-l" + i + "-bulk";
                String java = "c-l" + i + "-java";
                try (Statement st = c.createStatement()) {
                    st.execute("INSERT INTO conversations (conv_id, kind, head_seq) VALUES ('" + sql + "', 'group', " + k.head()
                            + "), ('" + bulk + "', 'group', " + k.head() + "), ('" + java + "', 'group', " + k.head() + ")");
                }
                List<Long> bySql = new ArrayList<>();
                for (int s = 0; s < k.n(); s++) bySql.add(ConversationLog.nextSeq(c, sql).orElseThrow());
                long lastInBulk = ConversationLog.allocate(c, bulk, k.n()).orElseThrow();

                ConversationLog.Heads heads = new ConversationLog.Heads();
                heads.locked(java, k.head());
                List<Long> byJava = new ArrayList<>();
                for (int s = 0; s < k.n(); s++) byJava.add(heads.next(java));
                try (PreparedStatement ps = c.prepareStatement(ConversationLog.MOVE_HEADS)) {
                    heads.bindMove(c, ps, 1);
                    ps.executeUpdate();
                }

                List<Long> expected = LongStream.rangeClosed(k.head() + 1, k.head() + k.n()).boxed().toList();
                assertEquals(expected, bySql, k.name() + ": NEXT_SEQ");
                assertEquals(bySql, byJava, k.name() + ": Heads.next");
                assertEquals(bySql.get(k.n() - 1), lastInBulk, k.name() + ": allocate(n)");
                for (String conv : List.of(sql, bulk, java)) {
                    assertEquals(OptionalLong.of(bySql.get(k.n() - 1)), ConversationLog.head(c, conv), k.name() + ": the head of " + conv);
                }
            }
        }
    }
}
