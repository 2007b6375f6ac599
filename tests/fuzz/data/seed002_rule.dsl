;; seed002_rule.dsl - the bad rule of Luminal's seed-002 bug, for tests/fuzz (never part of
;; the compiler's rules). Luminal folded a Cast to f32 into a bf16 cuBLASLt call with
;; beta = 1 and declared every type f32, so cuBLASLt read the bf16 residual C as f32 and
;; silently corrupted Llama's residual stream. The rule below does the same: like
;; blas-output-f32 (rules.dsl), but for a call that already folded the residual, and
;; without checking the residual's dtype: DTc becomes F32 while C stays the bf16 class.
;; It must be caught three ways: by the e-graph dtype check (ll_space_new), by the LLIR
;; verifier (ll_graph_verify), and by genome fuzzing (the executor reads C's bytes as
;; f32 as the GPU would, and the comparison with the reference fails); and, before all of
;; them, by the rules' own dtype-check / dtype-guard phases.
(rule ((= ?d (Op (Blas ?M ?N ?K ?bt ?la ?lb ?sa ?sb ?oa ?ob ?al ?ad 1.0 0 ?ta ?tb ?tc ?td ?tx) ?ins))
       (blas-shape ?d ?sh ?o) (= ?y (Op (Cast ?sh ?o ?o (F32)) (ICons ?d (INil))))
       (narrow-float ?td))
      ((union ?y (Op (Blas ?M ?N ?K ?bt ?la ?lb ?sa ?sb ?oa ?ob ?al ?ad 1.0 0 ?ta ?tb (F32) (F32) (F32)) ?ins))
       (blas-shape ?y ?sh ?o))
      :ruleset mm_epi :name "seed002-cast-folded-over-residual")
