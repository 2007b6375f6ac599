;; seed002_unguarded.dsl - seed002.dsl without the rules' own guard (the dtype-guard phase,
;; whose panic would stop the saturation first), so that the bad rule's nodes reach the
;; search space: the e-graph dtype check, the LLIR verifier and the fuzz must each catch
;; it (tests/fuzz). The phase fact is deleted by name, whatever its order. Run from the
;; repository root.
(include "tests/fuzz/data/seed002.dsl")
(ruleset seed002_unguard)
(rule ((phase ?o "dtype-guard" ?s)) ((delete (phase ?o "dtype-guard" ?s)))
      :ruleset seed002_unguard :name "seed002-unguard")
(run seed002_unguard 1)
