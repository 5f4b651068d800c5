// The fixed parts of the attention page (viz/attention_html.hpp): its stylesheet, its body (the
// empty views the script fills) and its script, which reads the JSON in #attention-data.
// Defined in attention_html_page.cpp.
#pragma once

namespace kf::detail {

extern const char* const attention_page_css;
extern const char* const attention_page_body;
extern const char* const attention_page_js;

}  // namespace kf::detail
