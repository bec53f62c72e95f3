"""The status quo for bench/status-quo.ts: an XGBoost model wrapped in Flask, served by gunicorn.

Written the way a team typically writes it, with no tuning: parse the Open Inference Protocol
v2 JSON body, build a numpy array, booster.predict(xgb.DMatrix(x)), answer v2-shaped JSON.

    cd bench/peers
    MODEL_PATH=../../fixtures/trees/bench-fraud.ubj gunicorn -w 2 -b 127.0.0.1:8001 flask_xgboost:app
    curl -s 127.0.0.1:8001/v2/models/bench/infer -H 'content-type: application/json' \
      -d '{"inputs":[{"name":"input","shape":[1,25],"datatype":"FP32","data":[0.5, ...]}]}'

Debian: apt-get install -y python3-flask gunicorn python3-xgboost
"""

import os

import numpy as np
import xgboost as xgb
from flask import Flask, jsonify, request

booster = xgb.Booster()
booster.load_model(os.environ["MODEL_PATH"])

app = Flask(__name__)


@app.get("/v2/health/ready")
def ready():
    return jsonify({"ready": True})


@app.post("/v2/models/<name>/infer")
def infer(name):
    body = request.get_json()
    try:
        tensor = body["inputs"][0]
        # null (JSON) becomes NaN: XGBoost's missing value.
        x = np.array(tensor["data"], dtype=np.float32).reshape(tensor["shape"])
    except (KeyError, IndexError, TypeError, ValueError) as e:
        return jsonify({"error": f"bad request: {e}"}), 400
    predictions = booster.predict(xgb.DMatrix(x))
    return jsonify(
        {
            "model_name": name,
            "outputs": [
                {
                    "name": "predictions",
                    "datatype": "FP32",
                    "shape": list(predictions.shape),
                    "data": predictions.tolist(),
                }
            ],
        }
    )
