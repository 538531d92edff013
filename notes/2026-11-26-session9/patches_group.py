{
 "group16": [("constexpr int kGroupM = 8; ", "constexpr int kGroupM = 16; ")],
 "group4": [("constexpr int kGroupM = 8; ", "constexpr int kGroupM = 4; ")],
}
