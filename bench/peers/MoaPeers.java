/*
 * A MOA learner on the events of an ARFF file (bench/peers/), compiled against MOA and the
 * weka-dev jar MOA declares.
 *
 *   MoaPeers prequential FILE.arff REPEATS WARMUP PREDICTIONS LABEL LEARNER
 *       LEARNER is a MOA command-line string (for example "bayes.NaiveBayes"). The events are
 *       read with Weka's ARFF reader and converted once to MOA's instances; then, for each of
 *       REPEATS fresh learners in one JVM, the test-then-train loop (getVotesForInstance, the
 *       vote's argmax as MOA's evaluators take it, then trainOnInstance), timed by the learner
 *       thread's CPU clock. The first WARMUP repeats are left out of best and median.
 *       PREDICTIONS: file for the first repeat's predicted class indices ("-": none).
 *
 * Prints one line: RESULT {json}.
 */

import com.yahoo.labs.samoa.instances.Instance;
import com.yahoo.labs.samoa.instances.Instances;
import com.yahoo.labs.samoa.instances.InstancesHeader;
import com.yahoo.labs.samoa.instances.WekaToSamoaInstanceConverter;
import moa.classifiers.Classifier;
import moa.core.Utils;
import moa.options.ClassOption;

public final class MoaPeers {

    private MoaPeers() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 7 || !"prequential".equals(args[0])) {
            throw new IllegalArgumentException(
                "usage: MoaPeers prequential FILE.arff REPEATS WARMUP PREDICTIONS LABEL LEARNER");
        }
        Harness.requireCpuClock();
        String file = args[1];
        int repeats = Integer.parseInt(args[2]);
        int warmup = Integer.parseInt(args[3]);
        String predictionsPath = args[4];
        String label = args[5];
        String learnerCli = args[6];

        weka.core.Instances wekaData = Harness.load(file);
        Instances data = new WekaToSamoaInstanceConverter().samoaInstances(wekaData);
        data.setClassIndex(data.numAttributes() - 1);
        InstancesHeader header = new InstancesHeader(data);
        int n = data.numInstances();
        Instance[] events = new Instance[n];
        for (int i = 0; i < n; i++) {
            events[i] = data.instance(i);
        }

        long[] nanos = new long[repeats];
        int[] correct = new int[repeats];
        int[] predicted = new int[n];
        for (int r = 0; r < repeats; r++) {
            Classifier learner = (Classifier) ClassOption.cliStringToObject(learnerCli, Classifier.class, null);
            learner.setModelContext(header);
            learner.prepareForUse();
            int right = 0;
            long t0 = Harness.cpuNanos();
            for (int i = 0; i < n; i++) {
                Instance e = events[i];
                int p = Utils.maxIndex(learner.getVotesForInstance(e));
                if (p == (int) e.classValue()) {
                    right++;
                }
                if (r == 0) {
                    predicted[i] = p;
                }
                learner.trainOnInstance(e);
            }
            nanos[r] = Harness.cpuNanos() - t0;
            correct[r] = right;
        }
        Harness.writePredictions(predictionsPath, predicted);
        Harness.report(label + " [moa " + learnerCli + "]", file, n, nanos, correct, warmup);
    }
}
