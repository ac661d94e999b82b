/** The Dataset of a location: the local directory, or (loaded only when used) an S3-compatible bucket. */
import type { StoreLayout } from '../layout.js';
import { LocalDataset, type Dataset } from './dataset.js';
import type { DatasetLocation } from './location.js';

/** `beforeUpload`: a bucket's check before each upload (that the run still holds its lock: bucket-run.ts). */
export async function openDataset(location: DatasetLocation, layout: StoreLayout, beforeUpload?: () => Promise<void>): Promise<Dataset> {
  if (location.kind === 'local') return new LocalDataset(location, layout.partitionFile);
  const { S3Dataset } = await import('./s3-dataset.js');
  return S3Dataset.open(location, layout, beforeUpload);
}
