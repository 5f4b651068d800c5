// Internal: the tile sizes and small helpers every tiled route of the smoothing primitive shares.
// Queries are cut into blocks of up to kBq rows, keys into blocks of kBk; a (query block, key
// block) pair is a tile.
#pragma once

#include <limits>

#include "detail/eigen.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::detail::tiles {

constexpr index kBq = 256;          // most query rows per tile (scratch size)
constexpr index kBqBackward = 128;  // the backward pass's tiles (five GEMMs each) stop at this
constexpr index kBqTopk = 64;       // the top-k path's query blocks
constexpr index kBk = 256;          // keys per tile
constexpr index kDirectMaxD = 8;    // sqdist factors this narrow use direct differences
constexpr index kNarrowDv = 4;      // this few value columns: P·V by dot products, not GEMM

template <class T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

template <class T>
using array_map = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

}  // namespace kf::detail::tiles
