"""Run a .tflite model in tflite-runtime (needs numpy<2, so it runs in .venv-tflite).

Usage: python tflite_reference.py MODEL.tflite INPUTS.npz OUTPUTS.npz
Inputs are keyed by input tensor name; outputs are written keyed by output tensor name.
"""

import sys

import numpy as np
from tflite_runtime.interpreter import Interpreter


def main(model: str, inputs: str, outputs: str) -> None:
    interpreter = Interpreter(model_path=model)
    interpreter.allocate_tensors()
    feeds = np.load(inputs)
    for detail in interpreter.get_input_details():
        interpreter.set_tensor(detail["index"], feeds[detail["name"]])
    interpreter.invoke()
    results = {d["name"]: interpreter.get_tensor(d["index"])
               for d in interpreter.get_output_details()}
    np.savez(outputs, **results)


if __name__ == "__main__":
    main(*sys.argv[1:4])
