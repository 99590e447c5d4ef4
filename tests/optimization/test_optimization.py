"""Tests for bert_keras/optimization.py.

The MirroredStrategy checks need 2 logical CPU devices, which must be configured
before TensorFlow runs any op: they run in a process that executes this file as a script
(`python tests/optimization/test_optimization.py --mirrored`, forked by tests/support/
tool_runner.py from a process that has imported TensorFlow but configured no device), so they
never clash with the device configuration of the pytest worker.
"""

import json
import os
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]

if __name__ == "__main__":  # subprocess mode: configure 2 logical CPUs before any op
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    _cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(_cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    sys.path.insert(0, str(REPO))

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_keras.optimization import (
    AdamW,
    Lamb,
    WarmupDecay,
    create_optimizer,
    layerwise_lr_multiplier,
)

# ----------------------------------------------------------------- references


def np_adam_direction(g, m, v, t, b1, b2, eps, bias_correction=True):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    mh, vh = m, v
    if bias_correction:
        mh, vh = m / (1 - b1**t), v / (1 - b2**t)
    return mh / (np.sqrt(vh) + eps), m, v


def np_step(w, g, m, v, t, lr, wd, decay, adapt, b1=0.9, b2=0.999, eps=1e-6, bias_correction=True):
    """One AdamW (adapt=False) or LAMB (adapt=True) step, You et al. 2019 Alg. 2."""
    r, m, v = np_adam_direction(g, m, v, t, b1, b2, eps, bias_correction)
    if decay:
        r = r + wd * w
    ratio = 1.0
    if adapt:
        wn, rn = np.linalg.norm(w), np.linalg.norm(r)
        ratio = wn / rn if wn > 0 and rn > 0 else 1.0
    return w - lr * ratio * r, m, v


def _named_variables(seed=0):
    """Variables with BERT-like paths: a kernel, a bias, a zero kernel and a LayerNorm."""
    rng = np.random.default_rng(seed)
    dense = keras.layers.Dense(2, name="transformer_layer_0_intermediate")
    zero = keras.layers.Dense(2, name="zero_dense", kernel_initializer="zeros")
    norm = keras.layers.LayerNormalization(name="attention_output_layer_norm")
    dense.build((None, 3))
    zero.build((None, 3))
    norm.build((None, 2))
    for v in dense.weights + norm.weights:
        v.assign(rng.normal(size=v.shape).astype("float32"))
    return [dense.kernel, dense.bias, zero.kernel, norm.gamma, norm.beta]


# --------------------------------------------------------------------- schedule


def test_warmup_decay_values_by_hand():
    s = WarmupDecay(1e-3, decay_steps=100, warmup_steps=10, end_learning_rate=1e-5, power=2.0)
    expected = {
        0: 0.0,
        5: 5e-4,
        10: 1e-3,
        55: (1e-3 - 1e-5) * 0.5**2 + 1e-5,  # half way through the decay
        100: 1e-5,
        150: 1e-5,
    }
    for step, lr in expected.items():
        np.testing.assert_allclose(float(s(step)), lr, rtol=1e-6, atol=1e-12,
                                   err_msg=f"step {step}")
    graph_fn = tf.function(lambda step: s(step))
    np.testing.assert_allclose(float(graph_fn(tf.constant(55, tf.int64))), expected[55], rtol=1e-6)


def test_warmup_decay_linear_without_warmup():
    s = WarmupDecay(2.0, decay_steps=4)
    np.testing.assert_allclose([float(s(n)) for n in range(6)], [2.0, 1.5, 1.0, 0.5, 0.0, 0.0])


def test_warmup_decay_config_round_trip():
    s = WarmupDecay(3e-4, decay_steps=50, warmup_steps=5, end_learning_rate=1e-6, power=0.5)
    s2 = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(s))
    assert isinstance(s2, WarmupDecay) and s2.get_config() == s.get_config()
    for n in (0, 3, 20, 60):
        assert float(s2(n)) == float(s(n))


# ------------------------------------------------------------ update references


@pytest.mark.parametrize("bias_correction", [True, False])
def test_adamw_matches_numpy_and_excludes_layer_norm_and_bias(bias_correction):
    variables = _named_variables()
    opt = AdamW(learning_rate=0.01, weight_decay=0.1, global_clipnorm=None,
                bias_correction=bias_correction)
    flags = {v.path: d for v, d in zip(variables, [True, False, True, False, False])}
    ws = [v.numpy() for v in variables]
    ms = [np.zeros_like(w) for w in ws]
    vs = [np.zeros_like(w) for w in ws]
    rng = np.random.default_rng(1)
    for t in (1, 2):
        grads = [rng.normal(size=w.shape).astype("float32") for w in ws]
        opt.apply([tf.constant(g) for g in grads], variables)
        for i, (g, v) in enumerate(zip(grads, variables)):
            ws[i], ms[i], vs[i] = np_step(ws[i], g, ms[i], vs[i], t, 0.01, 0.1, flags[v.path],
                                          adapt=False, bias_correction=bias_correction)
    for w, v in zip(ws, variables):
        np.testing.assert_allclose(v.numpy(), w, rtol=1e-5, atol=1e-6, err_msg=v.path)
    assert [opt.uses_weight_decay(v) for v in variables] == [True, False, True, False, False]


def test_adamw_on_bfloat16_variables_follows_the_rule():
    """16-bit variables follow the rule, computed in float32: in bfloat16, 1 - 0.999^t is 0
    and the Adam step vanished, and TensorFlow's fused Adam kernel (AdamW's on float32
    variables) returns NaN there."""
    start = np.array([1.0, -2.0, 0.5, 3.0], "float32")
    grad = np.array([0.3, -0.1, 0.2, 1.0], "float32")
    variable = keras.Variable(start, dtype="bfloat16", name="kernel")
    AdamW(learning_rate=0.1, weight_decay=0.1, global_clipnorm=None).apply(
        [tf.constant(grad, tf.bfloat16)], [variable])
    expected, _, _ = np_step(start, grad, 0.0, 0.0, 1, 0.1, 0.1, True, adapt=False)
    np.testing.assert_allclose(variable.numpy().astype("float32"), expected, rtol=1e-2)


def test_weight_decay_alone_hits_kernel_not_bias_or_layer_norm():
    variables = _named_variables()
    before = [v.numpy() for v in variables]
    opt = AdamW(learning_rate=0.5, weight_decay=0.2, global_clipnorm=None)
    opt.apply([tf.zeros(v.shape) for v in variables], variables)  # zero gradient: decay only
    kernel, bias, _, gamma, beta = [v.numpy() for v in variables]
    np.testing.assert_allclose(kernel, before[0] * (1 - 0.5 * 0.2), rtol=1e-6)
    for after, b in ((bias, before[1]), (gamma, before[3]), (beta, before[4])):
        np.testing.assert_array_equal(after, b)


def test_lamb_matches_numpy_reference():
    variables = _named_variables()
    opt = Lamb(learning_rate=0.05, weight_decay=0.1, global_clipnorm=None)
    decay = [True, False, True, False, False]  # excluded: bias, gamma, beta
    ws = [v.numpy() for v in variables]
    ms = [np.zeros_like(w) for w in ws]
    vs = [np.zeros_like(w) for w in ws]
    adam_kernel, am, av = ws[0], 0.0, 0.0  # the same kernel under AdamW, for contrast
    rng = np.random.default_rng(2)
    for t in (1, 2, 3):
        grads = [rng.normal(size=w.shape).astype("float32") for w in ws]
        opt.apply([tf.constant(g) for g in grads], variables)
        for i, g in enumerate(grads):
            # Excluded variables get neither weight decay nor layer adaptation.
            ws[i], ms[i], vs[i] = np_step(ws[i], g, ms[i], vs[i], t, 0.05, 0.1, decay[i],
                                          adapt=decay[i])
        adam_kernel, am, av = np_step(adam_kernel, grads[0], am, av, t, 0.05, 0.1, True,
                                      adapt=False)
    for w, v in zip(ws, variables):
        np.testing.assert_allclose(v.numpy(), w, rtol=1e-5, atol=1e-6, err_msg=v.path)
    # The trust ratio really acted on the kernel: AdamW moves it differently.
    assert np.abs(variables[0].numpy() - adam_kernel).max() > 1e-3


def test_global_clipnorm_clips_the_global_gradient():
    variables = _named_variables()
    ws = [v.numpy() for v in variables]
    grads = [np.full(w.shape, 3.0, "float32") for w in ws]
    norm = np.sqrt(sum((g**2).sum() for g in grads))
    # epsilon=1 makes Adam's step depend on the gradient's scale, so clipping shows.
    opt = AdamW(learning_rate=0.1, weight_decay=0.0, epsilon=1.0, global_clipnorm=1.0)
    opt.apply([tf.constant(g) for g in grads], variables)
    for w, g, v in zip(ws, grads, variables):
        expected, _, _ = np_step(w, g / norm, 0, 0, 1, 0.1, 0.0, False, False, eps=1.0)
        np.testing.assert_allclose(v.numpy(), expected, rtol=1e-5, atol=1e-7, err_msg=v.path)


# ---------------------------------------------------------- layer-wise LR decay


def test_layerwise_multipliers_on_real_encoder_paths():
    from bert_keras.models.encoder import BertEncoder

    encoder = BertEncoder(vocab_size=30, num_layers=2, hidden_size=8, num_heads=2,
                          intermediate_size=16, max_positions=8)
    opt = create_optimizer(learning_rate=1e-3, num_train_steps=10, layerwise_lr_decay=0.5,
                           num_layers=2)
    opt.build(encoder.trainable_variables)
    by_path = {v.path: opt.learning_rate_multiplier(v) for v in encoder.trainable_variables}
    for path, mult in by_path.items():
        if path.startswith(("token_embedding/", "segment_embedding/", "position_embedding/",
                            "embeddings_layer_norm/")):
            assert mult == 0.25, path
        elif path.startswith("transformer_layer_0/"):
            assert mult == 0.5, path
        else:
            assert path.startswith(("transformer_layer_1/", "pooler/")) and mult == 1.0, path
    decayed = {v.path for v in encoder.trainable_variables if opt.uses_weight_decay(v)}
    assert "token_embedding/embeddings" in decayed
    assert "transformer_layer_0/attention/qkv/kernel" in decayed
    assert not any(p.endswith(("/bias", "/gamma", "/beta")) for p in decayed)


def test_layerwise_decay_scales_adam_updates_per_layer():
    names = ["token_embedding", "transformer_layer_0", "transformer_layer_1",
             "transformer_layer_2", "pooler"]
    layers = [keras.layers.Dense(4, use_bias=False, name=n) for n in names]
    for layer in layers:
        layer.build((None, 4))
    variables = [layer.kernel for layer in layers]
    before = [v.numpy() for v in variables]
    # A gradient of 1e3 everywhere: Adam's first step is lr * 1 regardless of its size,
    # so only a per-variable learning rate can produce the ratios.
    opt = AdamW(learning_rate=0.01, weight_decay=0.0, global_clipnorm=None,
                layerwise_lr_decay=0.8, num_layers=3)
    opt.apply([tf.fill(v.shape, 1e3) for v in variables], variables)
    steps = [np.abs(b - v.numpy()).mean() for b, v in zip(before, variables)]
    expected = [0.01 * 0.8**3, 0.01 * 0.8**2, 0.01 * 0.8, 0.01, 0.01]
    np.testing.assert_allclose(steps, expected, rtol=1e-4)
    # The decoupled weight decay follows the variable's learning rate too.
    opt2 = AdamW(learning_rate=0.5, weight_decay=0.1, global_clipnorm=None,
                 layerwise_lr_decay=0.5, num_layers=3)
    w0 = [v.numpy() for v in variables]
    opt2.apply([tf.zeros(v.shape) for v in variables], variables)
    np.testing.assert_allclose(variables[0].numpy(), w0[0] * (1 - 0.5 * 0.5**3 * 0.1), rtol=1e-6)


def test_layerwise_multiplier_function():
    assert layerwise_lr_multiplier("bert/transformer_layer_11/output/kernel", 0.9, 12) == 1.0
    assert layerwise_lr_multiplier("position_embedding/embeddings", 0.9, 12) == pytest.approx(
        0.9**12)
    assert layerwise_lr_multiplier("classifier/kernel", 0.9, 12) == 1.0
    with pytest.raises(ValueError, match="transformer layer 3"):
        layerwise_lr_multiplier("transformer_layer_3/output/kernel", 0.9, 3)


# ------------------------------------------------------- gradient accumulation

K, B, UPDATES = 2, 8, 3


def _accumulation_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(UPDATES * K * B, 4)).astype("float32")
    y = rng.normal(size=(UPDATES * K * B, 1)).astype("float32")
    return x, y


def _fit(name, accumulation, batch, clip, strategy=None, policy="float32", loss_scale=None):
    """Fit a tiny dense model; return (weights, iterations, micro_steps, lr)."""
    x, y = _accumulation_data()
    strategy = strategy or tf.distribute.get_strategy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        with strategy.scope():
            keras.utils.set_random_seed(1)
            model = keras.Sequential([
                keras.Input((4,)),
                keras.layers.Dense(3, name="hidden"),
                keras.layers.Dense(1, name="out", dtype="float32"),
            ])
            # epsilon=1 makes Adam sensitive to the gradient's scale (sum vs mean, clipping).
            opt = create_optimizer(name, learning_rate=0.1, num_train_steps=4, num_warmup_steps=1,
                                   epsilon=1.0, global_clipnorm=clip,
                                   gradient_accumulation_steps=accumulation)
            compiled = opt if loss_scale is None else keras.optimizers.LossScaleOptimizer(
                opt, initial_scale=loss_scale)
            model.compile(optimizer=compiled, loss="mse")
        model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    return ([w.numpy() for w in model.weights], int(opt.iterations.numpy()),
            int(opt.micro_steps.numpy()), float(np.asarray(opt.learning_rate)))


_REFERENCES = {}


def _reference_fit(name, clip):
    """One device, no accumulation, batch K*B: what accumulation must reproduce (cached)."""
    if (name, clip) not in _REFERENCES:
        _REFERENCES[name, clip] = _fit(name, 1, K * B, clip)
    return _REFERENCES[name, clip]


def _max_diff(a, b):
    return float(max(np.abs(p - q).max() for p, q in zip(a, b)))


@pytest.mark.parametrize("name,clip", [("adamw", None), ("adamw", 0.05), ("lamb", 0.05)])
def test_accumulation_equals_large_batch_one_device(name, clip):
    acc_w, iters, micro, lr = _fit(name, K, B, clip)
    ref_w, ref_iters, _, ref_lr = _reference_fit(name, clip)
    assert (iters, micro) == (UPDATES, UPDATES * K)  # iterations counts applied updates
    assert ref_iters == UPDATES and lr == ref_lr == pytest.approx(0.1 * (1 - 2 / 3))
    assert _max_diff(acc_w, ref_w) < 1e-6
    # Without accumulation the small batches give a clearly different result.
    small_w, _, _, _ = _fit(name, 1, B, clip)
    assert _max_diff(small_w, ref_w) > 1e-4


def _mirrored_main():
    """Subprocess: accumulation under MirroredStrategy over 2 logical CPUs vs one device."""
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    results = {}
    for key, name, clip, policy, scale, acc in [
        ("adamw_f32", "adamw", None, "float32", None, K),
        ("adamw_f32_clip", "adamw", 0.05, "float32", None, K),
        ("adamw_f32_clip_noacc", "adamw", 0.05, "float32", None, 1),
        ("adamw_mixed_float16", "adamw", 0.05, "mixed_float16", 128.0, K),
        ("adamw_mixed_bfloat16", "adamw", 0.05, "mixed_bfloat16", None, K),
    ]:
        w, iters, micro, lr = _fit(name, acc, B * (K // acc), clip, strategy, policy, scale)
        ref_w, _, _, ref_lr = _reference_fit(name, clip)
        results[key] = {"diff": _max_diff(w, ref_w), "iterations": iters, "micro_steps": micro,
                        "lr": lr, "ref_lr": ref_lr}
    results["task_model_fit_outside_the_scope"] = _task_model_fit_outside_the_scope()
    print("RESULTS " + json.dumps(results))


def _task_model_fit_outside_the_scope():
    """A task model made and compiled (Keras' Adam) in a MirroredStrategy's scope, then fit
    outside it, as Keras allows: {"slots": its optimizer slots' variable class,
    "iterations"}, or {"error": ...}. One replica (1.6 s of CPU, against 3.5 s for two): its
    variables are mirrored all the same."""
    import bert_keras as bk

    with tf.distribute.MirroredStrategy(["/cpu:0"]).scope():
        model = bk.BertClassifier(bk.BertEncoder(vocab_size=100, num_layers=1, hidden_size=16,
                                                 num_heads=2, intermediate_size=32,
                                                 max_positions=16, dropout=0.0,
                                                 attention_dropout=0.0), 2, dropout=0.0)
        model.compile(optimizer=keras.optimizers.Adam(1e-3))
    x = {"input_word_ids": np.ones((8, 6), "int32"), "input_mask": np.ones((8, 6), "int32"),
         "input_type_ids": np.zeros((8, 6), "int32")}
    try:
        model.fit(x, np.array([0, 1] * 4), batch_size=8, verbose=0)
    except RuntimeError as error:
        return {"error": str(error)[:500]}
    return {"slots": type(model.optimizer.variables[-1].value).__name__,
            "iterations": int(model.optimizer.iterations.numpy())}


@pytest.fixture(scope="module")
def mirrored_results():
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    import tool_runner  # tests/support: forked from its server, TensorFlow's devices unset

    proc = tool_runner.run([sys.executable, str(pathlib.Path(__file__).resolve()), "--mirrored"],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULTS ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    return json.loads(lines[-1][len("RESULTS "):])


@pytest.mark.parametrize("key,tol", [
    ("adamw_f32", 1e-6),
    ("adamw_f32_clip", 1e-6),        # clipping sees the all-reduced gradient
    ("adamw_f32_clip_noacc", 1e-6),
    ("adamw_mixed_float16", 1e-4),   # LossScaleOptimizer around the accumulating optimizer
    ("adamw_mixed_bfloat16", 1e-4),
])
def test_accumulation_under_mirrored_strategy(mirrored_results, key, tol):
    r = mirrored_results[key]
    assert r["diff"] < tol, r
    assert r["iterations"] == UPDATES and r["lr"] == pytest.approx(r["ref_lr"]), r
    expected_micro = UPDATES if key.endswith("noacc") else UPDATES * K
    assert r["micro_steps"] == expected_micro, r


def test_a_task_model_compiled_in_a_strategy_scope_fits_outside_it(mirrored_results):
    # Its optimizer is built before fit traces the step (`build_before_fit`), in the model's
    # strategy scope: mirrored slots, not "Need to be inside `with strategy.scope()`".
    r = mirrored_results["task_model_fit_outside_the_scope"]
    assert r == {"slots": "MirroredVariable", "iterations": 1}, r


# ------------------------------------------------------------- config, factory


def test_optimizer_config_round_trip_and_model_save(tmp_path):
    opt = create_optimizer("lamb", learning_rate=2e-3, num_train_steps=20, num_warmup_steps=2,
                           weight_decay=0.05, gradient_accumulation_steps=2,
                           layerwise_lr_decay=0.9, num_layers=4, global_clipnorm=0.5)
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(opt))
    assert isinstance(restored, Lamb)
    assert restored.get_config() == opt.get_config()
    assert restored.accumulation_steps == 2 and restored.clip_global_norm == 0.5
    adamw = create_optimizer("adamw", learning_rate=1e-3, num_train_steps=5, bias_correction=False)
    assert AdamW.from_config(adamw.get_config()).get_config() == adamw.get_config()

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer=create_optimizer(learning_rate=1e-2, num_train_steps=10,
                                             gradient_accumulation_steps=2), loss="mse")
    model.fit(np.ones((6, 3)), np.ones((6, 2)), batch_size=2, verbose=0)  # 3 micro, 1 update
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    assert isinstance(loaded.optimizer, AdamW)
    assert int(loaded.optimizer.iterations.numpy()) == 1
    assert int(loaded.optimizer.micro_steps.numpy()) == 3


@pytest.mark.parametrize("kwargs,match", [
    (dict(learning_rate=-1e-4), "learning_rate=-0.0001"),
    (dict(num_warmup_steps=200), "200"),
    (dict(name="sgd"), "'sgd'"),
    (dict(layerwise_lr_decay=0.9), "num_layers=None"),
    (dict(gradient_accumulation_steps=0), "gradient_accumulation_steps=0"),
    (dict(weight_decay=-0.1), "weight_decay=-0.1"),
    (dict(end_learning_rate=1.0), "end_learning_rate=1.0"),
])
def test_create_optimizer_bad_args(kwargs, match):
    args = dict(learning_rate=1e-4, num_train_steps=100)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        create_optimizer(**args)


if __name__ == "__main__" and "--mirrored" in sys.argv:
    _mirrored_main()
