import { stopSharedCluster } from './postgres';

export const mochaHooks = {
  async afterAll() {
    await stopSharedCluster();
  },
};
