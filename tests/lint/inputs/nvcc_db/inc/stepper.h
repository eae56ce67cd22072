// Found only through the include directory named in rsp/includes_CUDA.rsp.
#pragma once
#define STEPPER_SCALE 2.0f
