;; bad_dtype_out.dsl - appended to rules.dsl by tests/llir/test_space.c: a rule that
;; gives a node the wrong dtype. It lowers an f32 Exp2 to a kernel whose dtype field
;; says f16, so the kernel would write f16 into a class every reader takes as f32. The
;; e-graph dtype check must refuse it, naming the node, both dtypes and the rule.
(rule ((= ?e (Op (Exp2 ?s ?a ?o) ?l)))
      ((union ?e (Op (KExp2 ?s ?a ?o (F16)) ?l)))
      :ruleset lower :name "bad-exp2-f16")
