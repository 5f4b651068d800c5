# The library's sources, relative to the repository root, in the groups the targets are built from
# (CMakeLists.txt; docs/architecture.md): a new source file is named once, here.
#   kernelformer_core        the primitive, its kernels and masks, arrays and files, tokenizers,
#                            layers and the optimizer: OpenBLAS, OpenMP (Eigen and fmt inside)
#   kernelformer_regression  smoothers, density, classification and their routes: + FFTW
#   kernelformer_viz         figures (PNG/SVG): + cairo
#   kernelformer             the whole: + models, the explorer, the attention page
# The Python extension (python/CMakeLists.txt) compiles the primitive and regression groups; the
# fuzz targets (fuzz/CMakeLists.txt) compile everything.
set(KF_PRIMITIVE_SOURCES
  src/kernels.cpp
  src/suggest.cpp
  src/masks.cpp
  src/progress.cpp
  src/smooth/smooth.cpp
  src/smooth/route.cpp
  src/smooth/tiles/scratch.cpp
  src/smooth/forward_gemm.cpp
  src/smooth/forward_registers.cpp
  src/smooth/backward_gemm.cpp
  src/smooth/backward_registers.cpp
  src/smooth/topk.cpp
  src/smooth/features.cpp
  src/smooth/features_backward.cpp
  src/smooth/reference.cpp
  src/smooth/weights.cpp
  src/smooth/partial.cpp
  src/smooth/recurrent.cpp
  src/detail/feature_maps.cpp
  src/detail/blas.cpp
  src/detail/vec_exp.cpp
  src/detail/tile_kernel.cpp
)
set(KF_CORE_SOURCES
  ${KF_PRIMITIVE_SOURCES}
  src/jobs.cpp
  src/io/npy.cpp
  src/io/csv.cpp
  src/io/atomic_file.cpp
  src/io/mapped_file.cpp
  src/text/tokenizer.cpp
  src/nn/parameters.cpp
  src/nn/linear.cpp
  src/nn/layer_norm.cpp
  src/nn/activation.cpp
  src/nn/dropout.cpp
  src/nn/embedding.cpp
  src/nn/attention.cpp
  src/nn/mlp.cpp
  src/nn/transformer_layer.cpp
  src/nn/lm_head.cpp
  src/optim/adamw.cpp
)
set(KF_REGRESSION_SOURCES
  src/regression/bandwidth.cpp
  src/regression/bandwidth_sj.cpp
  src/regression/kde_sample.cpp
  src/regression/lowess.cpp
  src/regression/route.cpp
  src/regression/smoother.cpp
  src/regression/nw_binned.cpp
  src/regression/kde.cpp
  src/regression/binned.cpp
  src/regression/kde_binned.cpp
  src/regression/knn.cpp
  src/regression/binned2d.cpp
  src/regression/nw_binned2d.cpp
  src/regression/smoother_checks.cpp
  src/regression/smoother_exact.cpp
  src/regression/sorted_window.cpp
  src/regression/radius.cpp
  src/regression/classifier.cpp
)
set(KF_VIZ_SOURCES
  src/viz/plot.cpp
  src/viz/report.cpp
)
set(KF_MODEL_SOURCES
  src/model/sequence_regressor.cpp
  src/model/sampling.cpp
  src/model/checkpoint.cpp
  src/model/saved_smoother.cpp
  src/model/periodic_experiment.cpp
  src/model/periodic_reference.cpp
  src/model/regressor_train.cpp
  src/model/forecast.cpp
  src/model/holt_winters.cpp
  src/model/series_trend.cpp
  src/model/series_tuning.cpp
  src/model/series_experiment.cpp
  src/model/series_backtest.cpp
  src/model/token_model.cpp
  src/model/generation.cpp
  src/model/lm_train.cpp
  src/model/seq2seq.cpp
  src/model/seq2seq_data.cpp
  src/explore/attention_fit.cpp
  src/explore/demos.cpp
  src/explore/explorer.cpp
  src/explore/explorer_head.cpp
  src/explore/head_kernel.cpp
  src/explore/inspect.cpp
  src/explore/trained_demos.cpp
  src/explore/attention_html.cpp
  src/explore/attention_html_page.cpp
)
set(KF_LIBRARY_SOURCES ${KF_CORE_SOURCES} ${KF_REGRESSION_SOURCES} ${KF_VIZ_SOURCES}
    ${KF_MODEL_SOURCES})
