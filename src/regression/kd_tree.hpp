// nanoflann's k-d tree over the rows of a matrix view (knn.cpp, radius.cpp).
#pragma once

#include <nanoflann.hpp>

#include <cstddef>

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

using kd_tree = nanoflann::KDTreeSingleIndexAdaptor<nanoflann::L2_Simple_Adaptor<double, cloud>,
                                                    cloud, -1, std::size_t>;

}  // namespace kf::detail
