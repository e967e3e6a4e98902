package im.bench;

import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.CountAtBucket;
import java.util.concurrent.TimeUnit;

/**
 * The cumulative bucket counts of a gateway's {@code im.acked.latency} timer at one moment, so
 * that the difference of two snapshots is the distribution of one phase. A percentile is read as
 * the upper bound of the bucket it falls in (the timer keeps Micrometer's percentile-histogram
 * buckets, about 10 % apart at these latencies).
 */
record AckedBuckets(double[] boundsMs, double[] counts) {
    static AckedBuckets of(Timer t) {
        CountAtBucket[] b = t.takeSnapshot().histogramCounts();
        double[] bounds = new double[b.length];
        double[] counts = new double[b.length];
        for (int i = 0; i < b.length; i++) {
            bounds[i] = b[i].bucket(TimeUnit.MILLISECONDS);
            counts[i] = b[i].count();
        }
        return new AckedBuckets(bounds, counts);
    }

    AckedBuckets minus(AckedBuckets earlier) {
        double[] d = counts.clone();
        for (int i = 0; i < d.length && i < earlier.counts.length; i++) d[i] -= earlier.counts[i];
        return new AckedBuckets(boundsMs, d);
    }

    /** Replies counted (the last bucket is cumulative over all). */
    long total() {
        return counts.length == 0 ? 0 : Math.round(counts[counts.length - 1]);
    }

    /** The upper bound (ms) of the bucket holding the {@code p}th percentile; NaN without samples. */
    double percentileAtMost(double p) {
        long n = total();
        if (n == 0) return Double.NaN;
        double want = n * p / 100.0;
        for (int i = 0; i < counts.length; i++) if (counts[i] >= want) return boundsMs[i];
        return Double.POSITIVE_INFINITY;
    }
}
