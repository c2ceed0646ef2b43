// Tensor: an fp32 array in host memory with a row-major shape. The unit every operator consumes
// and produces, every checkpoint stores and every hash names.
#ifndef POLNODE_KERNELS_TENSOR_H_
#define POLNODE_KERNELS_TENSOR_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "polnode/base/status.h"

namespace polnode::kernels {

/// Dimensions, outermost first (row-major). Images are NCHW. A scalar has shape {1}.
using Shape = std::vector<std::int64_t>;

/// Number of elements of `shape` (1 for an empty shape).
std::int64_t NumElements(const Shape& shape);

/// "[128, 784]".
std::string ShapeToString(const Shape& shape);

class Tensor {
 public:
  /// An empty tensor (shape {}, no data).
  Tensor() = default;

  /// A tensor of `shape` filled with +0.0f. Precondition: every dimension >= 0.
  explicit Tensor(Shape shape);

  /// A tensor of `shape` holding `values`; kInvalidArgument if the counts differ.
  static Result<Tensor> FromValues(Shape shape, std::vector<float> values);

  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  std::int64_t dim(int axis) const { return shape_[static_cast<std::size_t>(axis)]; }
  std::int64_t numel() const { return static_cast<std::int64_t>(data_.size()); }

  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }
  std::span<float> values() { return data_; }
  std::span<const float> values() const { return data_; }

  /// Changes the shape, keeping the data; kInvalidArgument if the element count differs.
  [[nodiscard]] Status Reshape(Shape shape);

  /// Makes this tensor `shape`, keeping existing storage (elements beyond the old count are
  /// +0.0f). Used by backends to size their outputs, which they then overwrite completely.
  void Resize(const Shape& shape);

  /// Exact equality: same shape and the same bits in every element (so -0.0 != +0.0, and a NaN
  /// equals a NaN with the same payload).
  bool BitwiseEqual(const Tensor& other) const;

 private:
  Shape shape_;
  std::vector<float> data_;
};

}  // namespace polnode::kernels

#endif  // POLNODE_KERNELS_TENSOR_H_
