(let three (Num 3))
