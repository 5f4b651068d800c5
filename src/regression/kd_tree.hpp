// nanoflann's k-d tree over the rows of a matrix view (knn.cpp, radius.cpp).
#pragma once

#include <nanoflann.hpp>

#include <cstddef>
#include <variant>

#include "kernelformer/tensor.hpp"

namespace kf::detail {

// nanoflann's view of the training rows (the view must outlive the tree).
struct cloud {
  const_matrix_view<double> x;
  std::size_t kdtree_get_point_count() const { return static_cast<std::size_t>(x.rows); }
  double kdtree_get_pt(std::size_t i, std::size_t c) const {
    return x(static_cast<index>(i), static_cast<index>(c));
  }
  template <class box>
  bool kdtree_get_bbox(box&) const {
    return false;
  }
};

// DIM > 0 fixes the number of columns at compile time (nanoflann then unrolls its distance
// loops: 3-D KNN ran ~1.5x faster than with DIM = -1, any number of columns).
template <int DIM>
using kd_tree_dim = nanoflann::KDTreeSingleIndexAdaptor<nanoflann::L2_Simple_Adaptor<double, cloud>,
                                                        cloud, DIM, std::size_t>;
using kd_tree = kd_tree_dim<-1>;

// A tree for 2, 3 or any number of columns, chosen at run time; visit it to search.
using kd_tree_any = std::variant<std::monostate, kd_tree_dim<2>, kd_tree_dim<3>, kd_tree>;
inline void kd_tree_build(kd_tree_any& t, const cloud& pts, index d, std::size_t leaf = 16) {
  const nanoflann::KDTreeSingleIndexAdaptorParams params(leaf);
  if (d == 2)
    t.emplace<kd_tree_dim<2>>(2, pts, params);
  else if (d == 3)
    t.emplace<kd_tree_dim<3>>(3, pts, params);
  else
    t.emplace<kd_tree>(static_cast<int>(d), pts, params);
}

}  // namespace kf::detail
