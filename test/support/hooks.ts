import { stopSharedCluster } from './postgres';
import { removeTempDirs } from './temp';

export const mochaHooks = {
  async afterAll() {
    await stopSharedCluster();
    removeTempDirs();
  },
};
