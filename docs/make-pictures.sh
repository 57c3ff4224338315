#!/bin/sh
# Regenerate the pictures and reports under docs/ that the documentation shows (run from the repository root).
set -e
stream-nb evaluate --input river:LED --events 20000 --report docs/evaluate-led
stream-nb evaluate --input river:Agrawal --events 20000 --report docs/evaluate-agrawal
stream-nb explain --input river:Agrawal --events 20000 --model tan \
  --event '{"salary": 115887.89, "commission": 0, "age": 71, "elevel": 3, "car": 20, "zipcode": 3, "hvalue": 0, "hyears": 23, "loan": 230385.96}' \
  --plot docs/explain/agrawal-tan.png
