"""When do unlabeled events help? Semi-supervised EM (``EM(unlabeled=True)``) against labels only.

    python bench/semi_supervised.py

Events come from a naive Bayes network (3 classes, 8 attributes of 4 values,
CPTs from a seeded Dirichlet), so the model's assumption holds. One event in
every RATE is labeled; naive Bayes learns the labeled ones only (weight 0), or
also the unlabeled ones by EM over the class with the given weight. Accuracy on
2,000 held-out events.
"""

from __future__ import annotations

import numpy as np

from stream_nb import EM, NaiveBayes


def naive_bayes_stream(n, seed, C=3, F=8, V=4):
    theta = np.random.default_rng(0).dirichlet(np.ones(V) * 0.5, size=(C, F))
    r = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = int(r.integers(C))
        out.append(({f"f{f}": f"v{r.choice(V, p=theta[y, f])}" for f in range(F)}, f"c{y}"))
    return out


def main():
    stream, test = naive_bayes_stream(5000, seed=1), naive_bayes_stream(2000, seed=2)
    print("| labeled | unlabeled weight | accuracy |")
    print("|---|---:|---:|")
    for rate in (100, 20):
        for weight in (0.0, 0.1, 0.5, 1.0):
            model = NaiveBayes(missing=EM(unlabeled=weight > 0, unlabeled_weight=weight or 1.0))
            for i, (x, y) in enumerate(stream):
                if i % rate == 0:
                    model.learn_one(x, y)
                elif weight > 0:
                    model.learn_one(x, None)
            acc = np.mean([model.predict_one(x) == y for x, y in test])
            print(f"| 1 in {rate} | {weight} | {acc:.4f} |")


if __name__ == "__main__":
    main()
