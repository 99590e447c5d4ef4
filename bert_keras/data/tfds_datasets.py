"""TFDS datasets as bert_keras reads them: prepared copies only, unless a download is asked for.

`open_prepared(name, data_dir, download=False)` gives the `tfds.core.DatasetBuilder` of a
dataset prepared in a TFDS data dir (default: $TFDS_DATA_DIR, else ~/tensorflow_datasets): one
TFDS has code for (glue/mrpc, squad, ...) or any dataset prepared there, a user's own
included, which TFDS reads from its files (`DIR/NAME[/CONFIG]/VERSION/dataset_info.json` and
`features.json`) without its code. `split_dataset(builder, name, split)` gives one split of
it as a tf.data.Dataset.

A dataset that is not prepared there is refused at once (no network, no retries, nothing
written: no data dir made, no partial download), with one InputError line naming the dataset,
the data dir and what to do: pass --tfds_data_dir pointing at a prepared copy, prepare one on
a machine with network (`prepare_command`: plain Python with what bert_keras installs, no
apache_beam) and copy it, or ask for the download (`download=True`, the tools'
--tfds_download). A download first probes the hosts of the URLs the builder registers
(`network.unreachable`: seconds, not the minutes of retries TFDS spends without network) and
is refused in one line when none answers. A download that fails or is interrupted (Ctrl-C, or
SIGTERM, which would otherwise end the process at once) removes what it added to the data dir.

Example (a data dir without the dataset: refused, nothing touched):
    >>> import os, tempfile
    >>> empty = tempfile.mkdtemp()
    >>> try:
    ...     open_prepared("glue/mrpc", data_dir=empty)
    ... except InputError as e:
    ...     print(str(e)[:60])
    TFDS dataset 'glue/mrpc' is not prepared in the data dir /...
    >>> os.listdir(empty)
    []
"""

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import threading

import tensorflow as tf
from absl import logging

from bert_keras import files
from bert_keras.data import network
from bert_keras.errors import InputError


def default_data_dir():
    """TFDS's default data dir, read now: $TFDS_DATA_DIR, else ~/tensorflow_datasets."""
    return os.environ.get("TFDS_DATA_DIR") or os.path.join(os.path.expanduser("~"),
                                                           "tensorflow_datasets")


def prepare_command(name, data_dir="DIR"):
    """The one-line command that prepares `name` into `data_dir` with what bert_keras installs
    (`tfds build` needs apache_beam, which it does not)."""
    return (f"python -c \"import tensorflow_datasets as tfds; tfds.builder('{name}', "
            f"data_dir='{data_dir}').download_and_prepare()\"")


def _first_line(error):
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


@contextlib.contextmanager
def _quietly():
    """Runs TFDS's builder code without its chatter and litter: absl warnings about data dirs
    that lack the dataset are silenced (the refusal says it in one line), and the empty
    `tempfile.mkdtemp("tfds")` directory TFDS makes for a dataset not prepared locally
    (`DatasetInfo.initialize_from_bucket`, which only GCS would fill) is made in a scratch
    directory that is removed afterwards."""
    verbosity, temporary = logging.get_verbosity(), tempfile.tempdir
    scratch = tempfile.mkdtemp(prefix="bert_keras_tfds_")
    logging.set_verbosity(logging.ERROR)
    tempfile.tempdir = scratch
    try:
        yield
    finally:
        tempfile.tempdir = temporary
        logging.set_verbosity(verbosity)
        shutil.rmtree(scratch, ignore_errors=True)


def _not_prepared(name, data_dir, data_path):
    return (f"TFDS dataset {name!r} is not prepared in the data dir {data_dir} (no "
            f"{os.path.join(data_path, 'dataset_info.json')}), and nothing is downloaded unless "
            f"asked: pass --tfds_data_dir=DIR of a prepared copy (prepare one on a machine with "
            f"network: {prepare_command(name)}, then copy DIR here), or add --tfds_download to "
            f"download and prepare it into {data_dir} now.")


def _unknown(name, data_dir):
    base = name.split(":")[0]
    return (f"TFDS dataset {name!r} is not one TFDS has code for, and the data dir {data_dir} "
            f"holds no prepared copy of it (no {os.path.join(data_dir, base)}/[CONFIG/]VERSION/"
            "dataset_info.json): pass --tfds_data_dir=DIR where it was prepared (your own "
            f"dataset: import its builder and run tfds.builder('{name}', data_dir='DIR')"
            ".download_and_prepare()).")


def open_prepared(name, data_dir=None, download=False):
    """The DatasetBuilder of TFDS dataset `name` prepared in `data_dir` (default:
    `default_data_dir()`); with `download`, it is downloaded and prepared there first if it is
    not. InputError (one line: the dataset, the data dir, what to do) for a name TFDS has no
    code or files for, a dataset not prepared there (without `download`), or a failed download
    (whose files are removed)."""
    import tensorflow_datasets as tfds  # imported only when a TFDS dataset is used

    data_dir = os.fspath(data_dir) if data_dir else default_data_dir()
    with _quietly():
        try:
            builder = tfds.builder(name, data_dir=data_dir)
        except tfds.core.registered.DatasetNotFoundError:
            raise InputError(_unknown(name, data_dir)) from None
        except (ValueError, AssertionError) as e:  # bad config, version or name syntax
            raise InputError(f"TFDS dataset {name!r} (data dir {data_dir}): "
                             f"{_first_line(e)}") from None
        if builder.is_prepared():
            return builder
        if not download:
            try:  # refused by as_dataset (which reads a dataset mocked by tfds.testing)
                builder.as_dataset(split=next(iter(builder.info.splits), "train"))
            except AssertionError:
                raise InputError(_not_prepared(name, data_dir,
                                               os.fspath(builder.data_path))) from None
            return builder
    _download(builder, name, data_dir)
    return builder


def _listing(data_dir, data_path):
    """What a download may add to a data dir: its entries two levels down, those of
    downloads/ and downloads/extracted/, and those beside the dataset's version directory
    (`data_path`'s parent, where TFDS prepares it in an incomplete.* directory) (None if the
    data dir does not exist)."""
    if not files.isdir(data_dir):
        return None
    found = set()
    for parent in (data_dir, files.join(data_dir, "downloads"),
                   files.join(data_dir, "downloads", "extracted"), os.path.dirname(data_path)):
        if files.isdir(parent):
            found.update(files.join(parent, entry) for entry in files.listdir(parent))
    for entry in list(found):
        if files.isdir(entry) and os.path.dirname(entry) == data_dir:
            found.update(files.join(entry, sub) for sub in files.listdir(entry))
    return found


def _remove_added(data_dir, data_path, before):
    added = ([data_dir] if before is None
             else sorted(_listing(data_dir, data_path) - before, key=len))
    for path in added:
        try:
            files.remove_tree(path)
        except (OSError, tf.errors.OpError):  # best effort: the download's error is the news
            pass


class _Terminated(BaseException):
    """SIGTERM during a download, raised where the download is so that its files are removed
    before the process ends."""


@contextlib.contextmanager
def _sigterm_unwinds():
    """SIGTERM raises `_Terminated` in the block where it would otherwise end the process at
    once (its default action, in the main thread) and leave the download's files behind."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield  # a handler of the program's own decides
        return

    def unwind(signum, frame):
        raise _Terminated()

    signal.signal(signal.SIGTERM, unwind)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _download(builder, name, data_dir):
    reason = network.unreachable(list(builder.url_infos or ()))  # the URLs its code fetches
    if reason:
        raise InputError(f"TFDS dataset {name!r}: downloading it needs the network, and none of "
                         f"the hosts it downloads from answered ({reason}); nothing was written "
                         f"to {data_dir}: prepare it on a machine with network "
                         f"({prepare_command(name)}) and pass --tfds_data_dir=DIR.")
    data_path = os.fspath(builder.data_path)
    before = _listing(data_dir, data_path)
    try:  # TFDS prints its progress: on stderr, so a tool's stdout stays its result
        with _sigterm_unwinds(), contextlib.redirect_stdout(sys.stderr):
            builder.download_and_prepare()
    except BaseException as e:
        _remove_added(data_dir, data_path, before)
        if isinstance(e, _Terminated):  # ends as SIGTERM does, its files gone
            os.kill(os.getpid(), signal.SIGTERM)
        if not isinstance(e, Exception):
            raise  # Ctrl-C: its files are gone too
        raise InputError(f"TFDS dataset {name!r}: downloading and preparing it into {data_dir} "
                         f"failed, nothing of it was kept ({type(e).__name__}: "
                         f"{_first_line(e)}); prepare it on a machine with network "
                         f"({prepare_command(name)}) and pass --tfds_data_dir=DIR.") from e


def split_dataset(builder, name, split):
    """Split `split` of a builder from `open_prepared` (slices such as "train[:10%]" too), in
    file order; InputError naming the dataset and its splits for a split it lacks."""
    try:
        return builder.as_dataset(split=split, shuffle_files=False)
    except ValueError as e:
        raise InputError(f"TFDS dataset {name!r} ({builder.data_dir}): split {split!r}: "
                         f"{_first_line(e)}") from None


__all__ = ["default_data_dir", "open_prepared", "prepare_command", "split_dataset"]
