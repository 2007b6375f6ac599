; main.dsl - a fixture of tests/llir/test_embed.c: cmake/LmEmbed.cmake replaces the include
; below by part.dsl's text (which includes leaf.dsl), so the embedded text includes nothing.
(datatype E (Num i64))
  (include "tests/llir/data/embed/part.dsl")
(let one (Num 1))
; an (include "mentioned") inside a line is left alone
