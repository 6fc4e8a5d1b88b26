"""Neural-network ops (TVM's `relay.nn`)."""

from engine.relay.op.nn.col2im import col2im
from engine.relay.op.nn.conv import conv2d, conv2d_transpose
from engine.relay.op.nn.conv_nd import conv1d, conv1d_transpose, conv3d, conv3d_transpose
from engine.relay.op.nn.deformable import deformable_conv2d, modulated_deformable_conv2d
from engine.relay.op.nn.dense import batch_flatten, batch_matmul, bias_add, dense, matmul
from engine.relay.op.nn.loss import nll_loss
from engine.relay.op.nn.norm import (
    batch_norm,
    dropout,
    dropout_raw,
    layer_norm,
    leaky_relu,
    log_softmax,
    lrn,
    prelu,
    relu,
    softmax,
)
from engine.relay.op.nn.pool_index import max_pool_argmax
from engine.relay.op.nn.pool_nd import (
    adaptive_avg_pool1d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool3d,
    avg_pool1d,
    avg_pool3d,
    max_pool1d,
    max_pool3d,
)
from engine.relay.op.nn.pooling import (
    adaptive_avg_pool2d,
    adaptive_max_pool2d,
    avg_pool2d,
    global_avg_pool2d,
    global_max_pool2d,
    max_pool2d,
)
from engine.relay.op.nn.spatial import depth_to_space, pad, space_to_depth, upsampling

__all__ = [
    "adaptive_avg_pool2d", "adaptive_max_pool2d", "avg_pool2d", "batch_flatten", "batch_matmul",
    "batch_norm", "bias_add", "col2im", "conv2d", "conv2d_transpose", "dense", "depth_to_space", "dropout",
    "dropout_raw", "global_avg_pool2d", "global_max_pool2d", "layer_norm", "leaky_relu",
    "log_softmax", "lrn", "matmul", "max_pool2d", "max_pool_argmax", "pad", "prelu", "relu", "softmax",
    "space_to_depth", "upsampling",
    # 1-D / 3-D
    "adaptive_avg_pool1d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool3d",
    "avg_pool1d", "avg_pool3d", "conv1d", "conv1d_transpose", "conv3d", "conv3d_transpose",
    "max_pool1d", "max_pool3d",
    # losses
    "nll_loss",
    # deformable
    "deformable_conv2d", "modulated_deformable_conv2d",
]
