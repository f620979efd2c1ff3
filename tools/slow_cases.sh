# The GoogleTest cases that train for long (all of Fashion-MNIST, every preset, the GAN and its score, the
# probe's clock, a study, the rcnn's checkpoint, the precision table's runs, training killed and
# resumed again and again), repeat one GEMM over cache blocks at every level, or check an int8
# model's Winograd convolutions against its GEMMs at every level (135 s as an emulated Core 2;
# test_int8_winograd's kernel cases stay), or train a graph model 3 epochs before quantizing it
# (7 s natively, over 10 minutes emulated; the int8 add's own cases stay): minutes where code runs
# 10-400 times slower than native (qemu-user, the sanitizers). They run in the native suite, and under Wine but for
# Acceptance.* (tools/cross_test.sh). Sourced by tools/test.sh and tools/cross_test.sh:
# GTEST_FILTER=-$slow_cases leaves them out.
slow_cases='Acceptance.*:Cli.EveryPresetTrains:Cli.GanTrainsSavesAndResumes:Cli.GanReportCarriesTheUntrainedGeneratorsScore:Cli.ProbeShowsTheMachine:StudyCli.ASmallStudy*:*CacheBlockEdgesInNAndThreads*:*rcl_T2_wide:Rcnn.CheckpointKeepsRunningStatistics:Cli.Precision*:CrashSafety.*:Int8Model.WinogradConvGivesTheGemmsBits:Int8Model.AGraphModelTracksItsF32Model'
# Under the sanitizers (tools/test.sh part 2) the GEMM's thread-count check runs at the two levels the
# model-level cases take (sse2, avx2) and not at the five others: the split over threads is the same
# code at every level (each level's tiles and edges have their own cases), and at 7 levels x 4
# transposes it was 250 of test_gemm's 365 s there.
sanitizer_repeats='AllIsasAndTransposes/GemmTrans.ThreadCountDoesNotChangeBits/reference_*:AllIsasAndTransposes/GemmTrans.ThreadCountDoesNotChangeBits/sse3_*:AllIsasAndTransposes/GemmTrans.ThreadCountDoesNotChangeBits/ssse3_*:AllIsasAndTransposes/GemmTrans.ThreadCountDoesNotChangeBits/sse4_1_*:AllIsasAndTransposes/GemmTrans.ThreadCountDoesNotChangeBits/avx_*'
