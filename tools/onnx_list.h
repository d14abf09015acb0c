/*
 * onnx_list.h - the convolutions of an ONNX model as a problem list, read by running
 * `python3 -m convfind.onnx MODEL [--input-shape NAME=D0,...]... --math MODE`
 * (onnx_list.c; the module is python/convfind/onnx).
 */
#ifndef CONVFIND_TOOLS_ONNX_LIST_H
#define CONVFIND_TOOLS_ONNX_LIST_H

#include <stddef.h>

#include "problem_list.h"

/* Appends the problems of `model` to `list`; each of `shapes[0..nshapes)` is passed on as
 * --input-shape, `math` ("strict", "tf32") as --math.  0, or -1 with one line in err:
 * the module cannot be imported, the interpreter cannot be run, the module failed (its
 * last line of stderr), or its output does not parse (file and line as for a problem
 * file). */
int cli_onnx_problems(const char *model, const char *const *shapes, int nshapes,
                      const char *math, cli_problem_list *list, char *err, size_t errsize);

#endif /* CONVFIND_TOOLS_ONNX_LIST_H */
