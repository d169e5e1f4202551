"""The result file a test workload writes for the script that checks it (keras_fit.py, torch_train.py,
torch2_cases.py for run_e2e.py and run_torch2_cases.py): JSON, one space of indent, a final newline.

    import result_json
    result_json.write(args.out, {"losses": [...], ...})
"""

import json


def write(path, result):
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
