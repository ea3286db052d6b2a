"""Data layer: acquisition (cache, offline mirror, torchvision download) and normalisation
(:mod:`.acquisition`), non-IID partitions and validation splits (:mod:`.partition`), and
partition statistics (:mod:`.statistics`)."""
from .acquisition import (
    DATA_DIR_ENV,
    DATASETS,
    FULL_DATA_ENV,
    GENERATORS,
    MIRROR_ENV,
    DataFileError,
    Dataset,
    DatasetSpec,
    DataUnavailableError,
    SubsetDataError,
    data_record,
    datasets,
    default_data_dir,
    denormalize,
    describe,
    input_shape,
    load_dataset,
    mirror_dir,
    normalize,
    read_npz,
    register_dataset,
    require_full_data,
    write_npz,
)
from .partition import PARTITION_SCHEMES, dirichlet_partition, validation_split
from .statistics import label_counts, mean_label_entropy

__all__ = [
    "DATASETS", "DATA_DIR_ENV", "MIRROR_ENV", "PARTITION_SCHEMES", "DataFileError", "DataUnavailableError", "Dataset",
    "DatasetSpec", "FULL_DATA_ENV", "SubsetDataError", "require_full_data", "GENERATORS",
    "datasets", "default_data_dir", "input_shape", "register_dataset", "denormalize", "data_record", "describe",
    "dirichlet_partition", "label_counts", "load_dataset",
    "mean_label_entropy", "mirror_dir", "normalize", "read_npz", "validation_split", "write_npz",
]
