{
 "stages3": [("constexpr int kStages = 4; ", "constexpr int kStages = 3; ")],
 "stages3_nostore": [("constexpr int kStages = 4; ", "constexpr int kStages = 3; "),
                     ("        store_tile(d, C, M, N, (unit_m", "        if (M < 0) store_tile(d, C, M, N, (unit_m")],
 "stages2_nostore": [("constexpr int kStages = 4; ", "constexpr int kStages = 2; "),
                     ("        store_tile(d, C, M, N, (unit_m", "        if (M < 0) store_tile(d, C, M, N, (unit_m")],
}
