/*
 * Shared by MoaPeers and WekaPeers (bench/peers/): the events from an ARFF file held in
 * memory as weka.core.Instances, the learner thread's CPU clock, the summary of repeated runs
 * and the one-line JSON results the Python side reads.
 *
 * Only API that Weka 3.6, Weka 3.8 and MOA's weka-dev 3.9 share is used, so the same source
 * compiles against each of the three classpaths (the class files differ: Weka 3.6's
 * Classifier is a class, 3.8's an interface).
 */

import java.io.BufferedReader;
import java.io.FileReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;

import weka.core.Instances;

final class Harness {

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private Harness() {}

    /** The events of an ARFF file, its last attribute the class. */
    static Instances load(String path) throws IOException {
        try (BufferedReader reader = new BufferedReader(new FileReader(path))) {
            Instances data = new Instances(reader);
            data.setClassIndex(data.numAttributes() - 1);
            return data;
        }
    }

    /** CPU time of the calling thread in nanoseconds (what the learner itself spent). */
    static long cpuNanos() {
        return THREADS.getCurrentThreadCpuTime();
    }

    static void requireCpuClock() {
        if (!THREADS.isCurrentThreadCpuTimeSupported()) {
            throw new IllegalStateException("this JVM cannot measure thread CPU time (ThreadMXBean)");
        }
        THREADS.setThreadCpuTimeEnabled(true);
    }

    /** Writes one predicted class index per line (-1: no prediction), for the agreement check. */
    static void writePredictions(String path, int[] predicted) throws IOException {
        if (path == null || path.isEmpty() || "-".equals(path)) {
            return;
        }
        try (PrintWriter out = new PrintWriter(path, "UTF-8")) {
            for (int p : predicted) {
                out.println(p);
            }
        }
    }

    /**
     * Prints the summary of a prequential learner as one line: RESULT {json}.
     *
     * @param nanos   CPU nanoseconds of each repeat, in order
     * @param correct events predicted right in each repeat
     * @param warmup  leading repeats left out of best and median (JIT warm-up)
     */
    static void report(String learner, String file, int events, long[] nanos, int[] correct, int warmup) {
        int repeats = nanos.length;
        long[] warm = Arrays.copyOfRange(nanos, Math.min(warmup, repeats - 1), repeats);
        Arrays.sort(warm);
        long best = warm[0];
        long median = warm.length % 2 == 1
            ? warm[warm.length / 2]
            : (warm[warm.length / 2 - 1] + warm[warm.length / 2]) / 2;
        boolean same = true;
        for (int c : correct) {
            same &= c == correct[0];
        }
        StringBuilder sb = new StringBuilder("RESULT {");
        sb.append("\"learner\": ").append(quote(learner));
        sb.append(", \"file\": ").append(quote(file));
        sb.append(", \"events\": ").append(events);
        sb.append(", \"repeats\": ").append(repeats);
        sb.append(", \"warmup\": ").append(repeats - warm.length);
        sb.append(", \"best_seconds\": ").append(best / 1e9);
        sb.append(", \"median_seconds\": ").append(median / 1e9);
        sb.append(", \"correct\": ").append(correct[0]);
        sb.append(", \"same_every_repeat\": ").append(same);
        sb.append(", \"java\": ").append(quote(System.getProperty("java.version")));
        sb.append("}");
        System.out.println(sb);
        System.out.flush();
    }

    static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            if (ch == '"' || ch == '\\') {
                sb.append('\\').append(ch);
            } else if (ch < 0x20) {
                sb.append(String.format("\\u%04x", (int) ch));
            } else {
                sb.append(ch);
            }
        }
        return sb.append('"').toString();
    }

    static String jsonArray(double[] values) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < values.length; i++) {
            if (i > 0) {
                sb.append(", ");
            }
            sb.append(values[i]);
        }
        return sb.append(']').toString();
    }
}
