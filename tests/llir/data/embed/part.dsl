; part.dsl - included by main.dsl
(let two (Num 2)) ; semicolons; and "quotes" \ backslashes survive
(include "tests/llir/data/embed/leaf.dsl")
