/*
 * Weka learners on the events of an ARFF file (bench/peers/): compiled and run once against
 * Weka 3.8 and once against Weka 3.6 (whose core still has weka.classifiers.bayes.AODE).
 *
 *   WekaPeers prequential FILE.arff REPEATS WARMUP PREDICTIONS LABEL CLASS [OPTION...]
 *       test-then-train over the events in memory: buildClassifier on the empty header, then
 *       per event classifyInstance, updateClassifier; REPEATS fresh learners in one JVM, the
 *       learner thread's CPU time of each loop measured, the first WARMUP repeats left out of
 *       best and median (JIT warm-up). PREDICTIONS: file for the first repeat's predicted
 *       class indices ("-": none).
 *   WekaPeers holdout FILE.arff NTRAIN PREDICTIONS LABEL CLASS [OPTION...]
 *       buildClassifier on the first NTRAIN events, classifyInstance on the rest.
 *   WekaPeers cutpoints FILE.arff NTRAIN
 *       the cut points weka.filters.supervised.attribute.Discretize (its defaults: Fayyad and
 *       Irani's MDL) chooses on the first NTRAIN events, per numeric attribute.
 *
 * Each prints one line per result: RESULT, HOLDOUT or CUTPOINTS, then a JSON object.
 */

import weka.classifiers.Classifier;
import weka.classifiers.UpdateableClassifier;
import weka.core.Instance;
import weka.core.Instances;
import weka.core.OptionHandler;
import weka.core.Utils;
import weka.filters.Filter;
import weka.filters.supervised.attribute.Discretize;

public final class WekaPeers {

    private WekaPeers() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            throw new IllegalArgumentException(
                "usage: WekaPeers prequential|holdout|cutpoints FILE.arff ... (see the source's header)");
        }
        Harness.requireCpuClock();
        switch (args[0]) {
            case "prequential":
                prequential(args);
                break;
            case "holdout":
                holdout(args);
                break;
            case "cutpoints":
                cutpoints(args);
                break;
            default:
                throw new IllegalArgumentException(
                    "mode: expected prequential, holdout or cutpoints, got " + args[0]);
        }
    }

    static Classifier make(String className, String[] options) throws Exception {
        Classifier c = (Classifier) Class.forName(className).getDeclaredConstructor().newInstance();
        if (options.length > 0) {
            ((OptionHandler) c).setOptions(options.clone());
        }
        return c;
    }

    static String describe(String label, Classifier c) {
        if (c instanceof OptionHandler) {
            return label + " [" + c.getClass().getName() + " "
                + Utils.joinOptions(((OptionHandler) c).getOptions()) + "]";
        }
        return label + " [" + c.getClass().getName() + "]";
    }

    static void prequential(String[] args) throws Exception {
        Instances data = Harness.load(args[1]);
        int repeats = Integer.parseInt(args[2]);
        int warmup = Integer.parseInt(args[3]);
        String predictionsPath = args[4];
        String label = args[5];
        String className = args[6];
        String[] options = java.util.Arrays.copyOfRange(args, 7, args.length);
        Instances header = new Instances(data, 0);
        int n = data.numInstances();
        Instance[] events = new Instance[n];
        for (int i = 0; i < n; i++) {
            events[i] = data.instance(i);
        }
        long[] nanos = new long[repeats];
        int[] correct = new int[repeats];
        int[] predicted = new int[n];
        String description = label;
        for (int r = 0; r < repeats; r++) {
            Classifier c = make(className, options);
            c.buildClassifier(header);
            UpdateableClassifier u = (UpdateableClassifier) c;
            description = describe(label, c);
            int right = 0;
            long t0 = Harness.cpuNanos();
            for (int i = 0; i < n; i++) {
                Instance e = events[i];
                double p = c.classifyInstance(e);
                if (p == e.classValue()) {
                    right++;
                }
                if (r == 0) {
                    predicted[i] = Double.isNaN(p) ? -1 : (int) p;
                }
                u.updateClassifier(e);
            }
            nanos[r] = Harness.cpuNanos() - t0;
            correct[r] = right;
        }
        Harness.writePredictions(predictionsPath, predicted);
        Harness.report(description, args[1], n, nanos, correct, warmup);
    }

    static void holdout(String[] args) throws Exception {
        Instances data = Harness.load(args[1]);
        int nTrain = Integer.parseInt(args[2]);
        String predictionsPath = args[3];
        String label = args[4];
        String className = args[5];
        String[] options = java.util.Arrays.copyOfRange(args, 6, args.length);
        int n = data.numInstances();
        if (nTrain <= 0 || nTrain >= n) {
            throw new IllegalArgumentException("NTRAIN: expected 0 < NTRAIN < " + n + ", got " + nTrain);
        }
        Instances train = new Instances(data, 0, nTrain);
        Instances test = new Instances(data, nTrain, n - nTrain);
        Classifier c = make(className, options);
        long t0 = Harness.cpuNanos();
        c.buildClassifier(train);
        long t1 = Harness.cpuNanos();
        int right = 0;
        int[] predicted = new int[test.numInstances()];
        for (int i = 0; i < test.numInstances(); i++) {
            Instance e = test.instance(i);
            double p = c.classifyInstance(e);
            predicted[i] = Double.isNaN(p) ? -1 : (int) p;
            if (p == e.classValue()) {
                right++;
            }
        }
        long t2 = Harness.cpuNanos();
        Harness.writePredictions(predictionsPath, predicted);
        System.out.println("HOLDOUT {\"learner\": " + Harness.quote(describe(label, c))
            + ", \"file\": " + Harness.quote(args[1])
            + ", \"train\": " + nTrain + ", \"test\": " + test.numInstances()
            + ", \"correct\": " + right
            + ", \"train_seconds\": " + (t1 - t0) / 1e9
            + ", \"test_seconds\": " + (t2 - t1) / 1e9
            + ", \"java\": " + Harness.quote(System.getProperty("java.version")) + "}");
    }

    static void cutpoints(String[] args) throws Exception {
        Instances data = Harness.load(args[1]);
        int nTrain = Integer.parseInt(args[2]);
        Instances train = new Instances(data, 0, Math.min(nTrain, data.numInstances()));
        Discretize mdl = new Discretize();
        mdl.setInputFormat(train);
        Filter.useFilter(train, mdl);
        StringBuilder sb = new StringBuilder("CUTPOINTS {");
        boolean first = true;
        for (int a = 0; a < train.numAttributes(); a++) {
            if (a == train.classIndex() || !train.attribute(a).isNumeric()) {
                continue;
            }
            double[] cuts = mdl.getCutPoints(a);
            sb.append(first ? "" : ", ").append(Harness.quote(train.attribute(a).name())).append(": ");
            sb.append(Harness.jsonArray(cuts == null ? new double[0] : cuts));
            first = false;
        }
        System.out.println(sb.append('}'));
    }
}
