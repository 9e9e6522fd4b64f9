# Writes OUT, a C file defining SYM (a NUL-terminated char array) and SYM_len with the bytes of
# IN: files the library writes out (the flame graph's page) are kept as text in the tree.
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," arr "${hex}")
string(REGEX REPLACE "((0x..,){24})" "\\1\n" arr "${arr}")
get_filename_component(name "${IN}" NAME)
file(WRITE "${OUT}.tmp" "/* generated from ${name} by cmake/embed.cmake */\n#include <stddef.h>\n"
  "extern const char ${SYM}[];\nextern const size_t ${SYM}_len;\n"
  "const char ${SYM}[] = {\n${arr}0 };\nconst size_t ${SYM}_len = sizeof(${SYM}) - 1;\n")
file(RENAME "${OUT}.tmp" "${OUT}")
