#include "polnode/solver/model_spec.h"

#include <gtest/gtest.h>

#include <string>

namespace polnode::solver {
namespace {

using kernels::Shape;

TEST(ModelSpecTest, ParsesAnMlp) {
  Result<ModelSpec> m = ParseModelSpec("mlp:784-256-128-10");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->input_shape, Shape{784});
  ASSERT_EQ(m->layers.size(), 3u);
  EXPECT_EQ(m->layers[0].name, "fc1");
  EXPECT_TRUE(m->layers[0].relu);
  EXPECT_TRUE(m->layers[1].relu);
  EXPECT_FALSE(m->layers[2].relu);
  EXPECT_EQ(m->num_outputs(), 10);
  ASSERT_EQ(m->params.size(), 6u);
  EXPECT_EQ(m->params[0].name, "fc1.w");
  EXPECT_EQ(m->params[0].shape, (Shape{784, 256}));
  EXPECT_EQ(m->params[0].fan_in, 784);
  EXPECT_EQ(m->params[1].name, "fc1.b");
  EXPECT_TRUE(m->params[1].is_bias);
  EXPECT_EQ(m->params[5].shape, Shape{10});
  EXPECT_TRUE(m->params[0].feeds_relu);
  EXPECT_TRUE(m->params[3].feeds_relu);
  EXPECT_FALSE(m->params[4].feeds_relu);  // the logit layer
  EXPECT_EQ(BatchInputShape(*m, 32), (Shape{32, 784}));
}

TEST(ModelSpecTest, ParsesACnn) {
  Result<ModelSpec> m = ParseModelSpec("cnn:c8-p-c16-p-f64-10");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->input_shape, (Shape{1, 28, 28}));
  ASSERT_EQ(m->layers.size(), 6u);
  EXPECT_EQ(m->layers[0].name, "conv1");
  EXPECT_EQ(m->layers[0].out_shape, (Shape{8, 28, 28}));
  EXPECT_EQ(m->layers[1].name, "pool1");
  EXPECT_EQ(m->layers[1].out_shape, (Shape{8, 14, 14}));
  EXPECT_EQ(m->layers[3].out_shape, (Shape{16, 7, 7}));
  EXPECT_EQ(m->layers[4].name, "fc1");
  EXPECT_TRUE(m->layers[4].flattens);
  EXPECT_EQ(m->layers[5].name, "fc2");
  EXPECT_FALSE(m->layers[5].flattens);
  ASSERT_EQ(m->params.size(), 8u);
  EXPECT_EQ(m->params[0].shape, (Shape{8, 1, 3, 3}));
  EXPECT_EQ(m->params[0].fan_in, 9);
  EXPECT_EQ(m->params[2].shape, (Shape{16, 8, 3, 3}));
  EXPECT_EQ(m->params[2].fan_in, 72);
  EXPECT_EQ(m->params[4].shape, (Shape{784, 64}));
  EXPECT_EQ(BatchInputShape(*m, 4), (Shape{4, 1, 28, 28}));
}

TEST(ModelSpecTest, CnnInputShapeAndOddPooling) {
  Result<ModelSpec> m = ParseModelSpec("cnn:i3x9x7-c2-p-5");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->input_shape, (Shape{3, 9, 7}));
  EXPECT_EQ(m->layers[1].out_shape, (Shape{2, 4, 3}));  // floor(9/2), floor(7/2)
  EXPECT_EQ(m->params[2].shape, (Shape{24, 5}));
}

TEST(ModelSpecTest, RejectsMalformedSpecs) {
  for (const char* bad : {"",
                          "mlp",
                          "mlp:",
                          "mlp:784",
                          "mlp:784-0-10",
                          "mlp:784--10",
                          "mlp:784-x-10",
                          "mlp:784-10-",
                          "mlp:784-99999999-10",
                          "rnn:4-4",
                          "cnn:",
                          "cnn:c8-p",
                          "cnn:c8-f4-p-10",
                          "cnn:f4-c8-10",
                          "cnn:c0-10",
                          "cnn:q-10",
                          "cnn:i1x28-10",
                          "cnn:i1x1x1-p-10",
                          "cnn:c8-p-p-p-p-p-10",
                          "cnn:10-",
                          "cnn:i1x4096x4096-c4096-10"}) {
    Result<ModelSpec> m = ParseModelSpec(bad);
    EXPECT_FALSE(m.ok()) << "'" << bad << "' parsed";
    if (!m.ok()) {
      EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(m.status().message().find("model spec"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace polnode::solver
