// The honest side of the red-team daemon test (tests/gpu/test_redteam.cpp): kernels_templates/fa2_mma.cu as
// it is, in this folder so that one --templates folder holds the honest template and the cheats.
#include "../../../kernels_templates/fa2_mma.cu"
