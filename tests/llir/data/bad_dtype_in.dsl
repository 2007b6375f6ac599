;; bad_dtype_in.dsl - appended to rules.dsl by tests/llir/test_space.c: a rule whose
;; kernel reads its input as another dtype than the input has (Luminal's seed-002 bug,
;; a bf16 buffer read as f32, the other way round): a Cast whose DTfrom says bf16 over an
;; int input. The e-graph dtype check must refuse it where it is made.
(rule ((= ?e (Op (Cast ?s ?a ?o ?to) ?l)))
      ((union ?e (Op (KCast ?s ?a ?o (Bf16) ?to) ?l)))
      :ruleset lower :name "bad-cast-reads-bf16")
