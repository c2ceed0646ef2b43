#include "polnode/kernels/tensor.h"

#include <cstring>
#include <utility>

namespace polnode::kernels {

std::int64_t NumElements(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::string ShapeToString(const Shape& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  out += "]";
  return out;
}

Tensor::Tensor(Shape shape)
    : shape_(std::move(shape)), data_(static_cast<std::size_t>(NumElements(shape_)), 0.0f) {}

Result<Tensor> Tensor::FromValues(Shape shape, std::vector<float> values) {
  for (std::int64_t d : shape) {
    if (d < 0) return Status::InvalidArgument("negative dimension in shape " + ShapeToString(shape));
  }
  if (NumElements(shape) != static_cast<std::int64_t>(values.size())) {
    return Status::InvalidArgument("shape " + ShapeToString(shape) + " needs " +
                                   std::to_string(NumElements(shape)) + " values, got " +
                                   std::to_string(values.size()));
  }
  Tensor t;
  t.shape_ = std::move(shape);
  t.data_ = std::move(values);
  return t;
}

Status Tensor::Reshape(Shape shape) {
  for (std::int64_t d : shape) {
    if (d < 0) return Status::InvalidArgument("negative dimension in shape " + ShapeToString(shape));
  }
  if (NumElements(shape) != numel()) {
    return Status::InvalidArgument("cannot reshape " + ShapeToString(shape_) + " to " +
                                   ShapeToString(shape));
  }
  shape_ = std::move(shape);
  return Status::Ok();
}

void Tensor::Resize(const Shape& shape) {
  if (shape == shape_) return;
  shape_ = shape;
  data_.resize(static_cast<std::size_t>(NumElements(shape_)), 0.0f);
}

bool Tensor::BitwiseEqual(const Tensor& other) const {
  return shape_ == other.shape_ &&
         (data_.empty() || std::memcmp(data_.data(), other.data_.data(), data_.size() * sizeof(float)) == 0);
}

}  // namespace polnode::kernels
