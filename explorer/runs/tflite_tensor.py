"""Read one tensor of a .tflite model in tflite-runtime (run by .venv-tflite's python: it
needs numpy<2 and imports nothing of the explorer).

Usage: python tflite_tensor.py MODEL.tflite INPUTS.npz OUT.npz LAYER [LAYER...]
Inputs are keyed by input tensor name. The latest of the LAYERs (tensor names) in the
model's tensor order is read, every tensor kept; OUT holds `layer` and `value`.
"""

import sys

import numpy as np
from tflite_runtime.interpreter import Interpreter


def main(model: str, inputs: str, out: str, *layers: str) -> None:
    interpreter = Interpreter(model_path=model, experimental_preserve_all_tensors=True)
    interpreter.allocate_tensors()
    feeds = np.load(inputs)
    for detail in interpreter.get_input_details():
        interpreter.set_tensor(detail["index"], feeds[detail["name"]])
    interpreter.invoke()
    wanted = set(layers)
    found = [d for d in interpreter.get_tensor_details() if d["name"] in wanted]
    if not found:
        sys.exit(f"none of the layers {', '.join(layers)} names a tensor of the model")
    last = found[-1]
    np.savez(out, layer=np.array(last["name"]), value=interpreter.get_tensor(last["index"]))


if __name__ == "__main__":
    main(*sys.argv[1:])
