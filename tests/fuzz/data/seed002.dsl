;; seed002.dsl - the compiler's rules plus the seed-002 bad rule (tests/fuzz). Includes
;; resolve from the working directory: run from the repository root.
(include "rules.dsl")
(include "tests/fuzz/data/seed002_rule.dsl")
