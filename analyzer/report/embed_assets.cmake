# Writes the report's stylesheet and script into a C++ header as raw string literals (html.cc includes it).
file(READ ${CSS} css)
file(READ ${JS} js)
file(WRITE ${OUT}.tmp "static const char kHtmlCss[] = R\"lockstep_asset(${css})lockstep_asset\";\n"
                      "static const char kHtmlJs[] = R\"lockstep_asset(${js})lockstep_asset\";\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
