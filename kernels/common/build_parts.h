// Building one .cu file in parts, on several cores at once (aisp_kernels.build, CudaLibrary(parts=N)).
//
// Why: a source with several CUTLASS kernels spends most of a minute in cicc, instantiating one
// kernel's templates after another on one core (ch09/cutlass_gemm.cu: 80 s, the longest build of
// a fresh machine's gate). Built in N parts, nvcc compiles the file N times, with
// -DAISP_PARTS=N -DAISP_PART=i, at once, and links the N objects into the one library.
//
// How a source splits: it gives each kernel's entry points (host functions that instantiate and
// launch it) a part number p and defines them under `#if AISP_IN_PART(p)`, declares them in every
// part (outside an anonymous namespace, so that they link across parts), and keeps its C API and
// dispatch table in part 0. Built whole (no -D), every part is in: the same code as one file.
// The kernels, their flags and so their SASS are the same either way; only where they are compiled
// changes.
#pragma once

#ifndef AISP_PARTS
#define AISP_PARTS 1
#endif
#ifndef AISP_PART
#define AISP_PART 0
#endif

// True in the compile that builds part `p` (p taken modulo the parts asked for, so that a source
// written for three parts also builds in one or two).
#define AISP_IN_PART(p) ((p) % AISP_PARTS == AISP_PART)
