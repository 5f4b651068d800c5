// libFuzzer target: the explorer's HTTP API (kf serve) as a request reaches it. The input is
// "PATH?QUERY": a known API path picks its handler (otherwise the input's length picks one and the
// whole input is the query), httplib decodes the query as the server does, and the handler runs
// with the server's caches kept across inputs. Every answer must be 200 with a JSON body, or 400
// whose "error" is one bounded line; a 500 (an exception the API did not expect) is a finding.
#include <httplib.h>

#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "fuzz_common.hpp"
#include "serve_api.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto handlers = kf::cli::explorer_api_handlers();
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::size_t mark = text.find('?');
  const std::string path = text.substr(0, mark);
  std::size_t pick = size % handlers.size();
  std::string query = text;
  for (std::size_t i = 0; i < handlers.size(); ++i)
    if (handlers[i].first == path)
      pick = i, query = mark == std::string::npos ? "" : text.substr(mark + 1);

  httplib::Request req;
  req.path = handlers[pick].first;
  httplib::detail::parse_query_text(query, req.params);
  httplib::Response res;
  handlers[pick].second(req, res);

  const auto body = nlohmann::json::parse(res.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) {
    std::fprintf(stderr, "fuzz: %s answered a body that is not JSON\n", req.path.c_str());
    std::abort();
  }
  if (res.status == 400) {
    if (!body.contains("error") || !body["error"].is_string()) std::abort();
    kf::fuzz::check_message(body["error"].get<std::string>().c_str());
  } else if (res.status != 200) {
    std::fprintf(stderr, "fuzz: %s answered %d: %.300s\n", req.path.c_str(), res.status,
                 res.body.c_str());
    std::abort();
  }
  return 0;
}
