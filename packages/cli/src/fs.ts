export { writeFileAtomic } from '@delegate-git/core/atomic-file';
