// Forwarder for the red-team templates (redteam.cuh): kernels_templates/blocks/cta_tile.cuh includes
// "cta_order.cuh" from the template folder (-I), which for these templates is tests/data/redteam.
#pragma once
#include "../../../kernels_templates/cta_order.cuh"
