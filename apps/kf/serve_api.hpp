// kf serve's JSON API (the explorer's; computed by explore/explorer.hpp and explorer_head.hpp).
//   GET /api/functions, /api/kernels        data sets; NW kernels, attention kernels and modes,
//                                           with each kernel's extra parameters for controls
//   GET /api/smooth?<request>[&point=i|&at=x]  data, curves, downsampled weight matrices, the
//                                           head (training loss), and the profile of point i
//                                           (or of the point nearest x)
//   GET /api/profile?<request>&point=i      the weights of one query point
//   GET /api/fit?<request>                  the slow diagnostics: LOO-CV bandwidth, the head read
//                                           as a kernel (head_kernel_fit), its asymmetry
// <request> = function, n, noise, seed, kernel, bandwidth, attention, attention_kernel,
// temperature, grid. Numbers are rounded to what is drawn (5 significant digits for data and
// curves, 4 for weights, 0 below 1e-5 of a profile's largest weight); weight matrices travel as
// 8-bit levels (the colour map's 256 steps) in base64 with their scale. Trained heads, LOO
// bandwidths and head fits are cached by what they depend on, so slider moves that do not change
// them cost only the curves.
#pragma once

#include <httplib.h>

#include <string>
#include <utility>
#include <vector>

namespace kf::cli {

// The API's handlers by path, each answering 200, 400 (a bad parameter, named) or 500 with a JSON
// body; add_explorer_api registers them (and a 404 for other /api/ paths). fuzz/fuzz_request.cpp
// calls them directly.
std::vector<std::pair<std::string, httplib::Server::Handler>> explorer_api_handlers();

void add_explorer_api(httplib::Server& svr);

}  // namespace kf::cli
